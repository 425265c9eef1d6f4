-- Funnel per country: how many users view, add to cart and buy.
select
    country_code,
    country_name,
    region,
    count(distinct user_id) as users,
    sum(case when event_type = 'view' then 1 else 0 end) as views,
    sum(case when event_type = 'cart' then 1 else 0 end) as carts,
    sum(case when event_type = 'purchase' then 1 else 0 end) as purchases,
    sum(case when event_type = 'purchase' then 1 else 0 end)
        / sum(case when event_type = 'view' then 1 else 0 end) as view_to_purchase_rate
from {{ ref('stg_events_enriched') }}
group by country_code, country_name, region
