-- The 100 best selling products by revenue; a view, recomputed on every read.
{{ config(materialized='view') }}

select product_id, category_name, revenue, product_rank
from (
    select
        product_id,
        category_name,
        sum(revenue) as revenue,
        row_number() over (order by sum(revenue) desc, product_id) as product_rank
    from {{ ref('stg_events_enriched') }}
    where is_conversion
    group by product_id, category_name
) ranked
where product_rank <= 100
