{#
  The click stream: synthetic e-commerce events, materialized as a Qbeast table indexed on time,
  user and product. Every column is a pure function of the event id (Spark's deterministic
  Murmur3 `hash`), so builds with the same variables give identical tables and the tests can check
  exact totals.

  The first build generates `events_rows` events. Every later `dbt run` delivers the next
  `events_increment` ids plus, as real streams do, the last `events_redelivered` ids once more
  (late and repeated deliveries). incremental_strategy='merge' on unique_key='event_id' upserts
  them: the repeated events update their rows in place and only the new ids are inserted, so
  the click stream holds each id once (an append would double the repeated ones, and the
  `unique` test and the exact totals downstream would fail).
#}
{{ config(
    materialized='qbeast',
    columns_to_index=['event_time', 'user_id', 'product_id'],
    cube_size=var('events_cube_size'),
    incremental_strategy='merge',
    unique_key='event_id',
    event_time='event_time',
) }}

{% if is_incremental() %}
  {% set redelivered = [var('events_redelivered'), var('events_rows')] | min %}
  {% set first_id = '(select max(event_id) + 1 - ' ~ redelivered ~ ' from ' ~ this ~ ')' %}
  {% set id_count = var('events_increment') + redelivered %}
{% else %}
  {% set first_id = '0' %}
  {% set id_count = var('events_rows') %}
{% endif %}

with dims as (
    select
        (select count(*) from {{ ref('countries') }}) as n_countries,
        (select count(*) from {{ ref('product_categories') }}) as n_categories,
        {{ first_id }} as first_id
),

draws as (
    select
        dims.first_id + r.id as id,
        pmod(hash(dims.first_id + r.id, 'user'), 50000) as user_id,
        pmod(hash(dims.first_id + r.id, 'product'), 5000) as product_id,
        pmod(hash(dims.first_id + r.id, 'type'), 100) as type_draw,
        pmod(hash(dims.first_id + r.id, 'time'), 90 * 86400) as second_offset
    from range({{ id_count }}) r
    cross join dims
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
