-- The daily revenue mart adds up to the purchases of the raw click stream.
with mart as (
    select coalesce(sum(revenue), 0) as revenue, coalesce(sum(orders), 0) as orders
    from {{ ref('daily_category_revenue') }}
),
raw as (
    select coalesce(sum(price * quantity), 0) as revenue, count(*) as orders
    from {{ ref('events') }}
    where event_type_id = 4
)
select mart.revenue as mart_revenue, raw.revenue as raw_revenue, mart.orders, raw.orders
from mart cross join raw
where mart.revenue != raw.revenue or mart.orders != raw.orders
