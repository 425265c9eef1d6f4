-- Revenue and orders per day and product category.
select
    event_date,
    department,
    category_name,
    count(*) as orders,
    sum(quantity) as units,
    sum(revenue) as revenue
from {{ ref('stg_events_enriched') }}
where is_conversion
group by event_date, department, category_name
