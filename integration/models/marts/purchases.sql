-- One row per purchase, built with dbt's microbatch strategy: each batch replaces the purchases
-- of its window (one commit per batch). The click stream is read only for that window: its
-- `event_time` config lets dbt filter it per batch (an ephemeral model in between would not be
-- filtered, and the batch would fail on rows outside its window). Batches are years, as the
-- generated events span 90 days of 2024 and a run's batches reach up to today: a plain
-- `dbt run` builds 2024 and a few empty years. `make demo` reprocesses the events' range on
-- every run (--event-time-start/--event-time-end), so the events merged into the click stream
-- reach this table too. Indexed on the event time first: a batch reads and rewrites only the
-- files of its own window.
{{ config(
    materialized='incremental',
    file_format='qbeast',
    incremental_strategy='microbatch',
    event_time='event_time',
    batch_size='year',
    begin=var('events_start'),
    lookback=1,
    columns_to_index=['event_time', 'category_name'],
    cube_size=var('events_cube_size'),
) }}
select
    e.event_id,
    e.event_time,
    e.user_id,
    c.country_code,
    p.category_name,
    e.quantity,
    e.price * e.quantity as revenue
from {{ ref('events') }} e
join {{ ref('countries') }} c on e.country_id = c.country_id
join {{ ref('product_categories') }} p on e.category_id = p.category_id
where e.event_type_id = 4
