-- The funnel counts every view, cart and purchase of the click stream exactly once.
with funnel as (
    select sum(views) as views, sum(carts) as carts, sum(purchases) as purchases
    from {{ ref('country_funnel') }}
),
raw as (
    select
        sum(case when event_type_id = 1 then 1 else 0 end) as views,
        sum(case when event_type_id = 2 then 1 else 0 end) as carts,
        sum(case when event_type_id = 4 then 1 else 0 end) as purchases
    from {{ ref('events') }}
)
select *
from funnel cross join raw
where funnel.views != raw.views or funnel.carts != raw.carts or funnel.purchases != raw.purchases
