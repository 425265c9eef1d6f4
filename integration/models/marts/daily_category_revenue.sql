-- Revenue and orders per day and product category. A qbeast model without an incremental
-- strategy: rebuilt on every run like a table (assert_revenue_reconciles would catch rows
-- appended twice), and sampled by the cluster tests.
{{ config(materialized='qbeast', columns_to_index=['event_date', 'category_name'], cube_size=100) }}
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
