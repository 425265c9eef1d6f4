-- Every event falls in the 90 days that start at `events_start`.
select event_id, event_time
from {{ ref('events') }}
where event_time < to_timestamp('{{ var("events_start") }}')
   or event_time >= to_timestamp('{{ var("events_start") }}') + interval 90 days
