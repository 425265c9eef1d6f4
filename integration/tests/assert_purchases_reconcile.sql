-- The microbatch mart holds every purchase of the click stream once, with the same revenue.
with mart as (
    select count(*) as orders, count(distinct event_id) as ids,
           coalesce(sum(revenue), 0) as revenue
    from {{ ref('purchases') }}
),
raw as (
    select count(*) as orders, coalesce(sum(price * quantity), 0) as revenue
    from {{ ref('events') }}
    where event_type_id = 4
)
select mart.orders as mart_orders, raw.orders as raw_orders, mart.ids, mart.revenue, raw.revenue
from mart cross join raw
where mart.orders != raw.orders or mart.ids != mart.orders or mart.revenue != raw.revenue
