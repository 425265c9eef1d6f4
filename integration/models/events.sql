{#
  The click stream: `events_rows` synthetic e-commerce events. Every column is a pure function of
  the row number (Spark's deterministic Murmur3 `hash`), so two builds with the same variables give
  identical tables and the tests can check exact totals.
#}
{{ config(materialized='table') }}

with dims as (
    select
        (select count(*) from {{ ref('countries') }}) as n_countries,
        (select count(*) from {{ ref('product_categories') }}) as n_categories
),

draws as (
    select
        id,
        pmod(hash(id, 'user'), 50000) as user_id,
        pmod(hash(id, 'product'), 5000) as product_id,
        pmod(hash(id, 'type'), 100) as type_draw,
        pmod(hash(id, 'time'), 90 * 86400) as second_offset
    from range({{ var('events_rows') }})
)

select
    d.id as event_id,
    timestamp_seconds(
        unix_seconds(to_timestamp('{{ var("events_start") }}')) + d.second_offset
    ) as event_time,
    d.user_id,
    d.user_id * 10000 + cast(d.second_offset / 1800 as bigint) as session_id,
    1 + pmod(hash(d.user_id, 'country'), dims.n_countries) as country_id,
    element_at(array('mobile', 'desktop', 'tablet'), 1 + pmod(hash(d.user_id, 'device'), 3)) as device,
    d.product_id,
    1 + pmod(d.product_id, dims.n_categories) as category_id,
    case
        when d.type_draw < 62 then 1
        when d.type_draw < 82 then 2
        when d.type_draw < 90 then 3
        else 4
    end as event_type_id,
    cast(2 + pmod(hash(d.product_id, 'price'), 49800) / 100.0 as decimal(10, 2)) as price,
    case when d.type_draw >= 90 then 1 + pmod(hash(d.id, 'quantity'), 3) else 0 end as quantity
from draws d
cross join dims
