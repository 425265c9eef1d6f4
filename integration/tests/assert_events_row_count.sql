-- The click stream holds ids 0..n-1 exactly once, n = `events_rows` plus whole increments: the
-- merge of a later run updates the redelivered ids instead of adding them again.
select count(*) as actual_rows, count(distinct event_id) as distinct_ids, max(event_id) as max_id
from {{ ref('events') }}
having count(*) != count(distinct event_id)
    or count(*) != max(event_id) + 1
    or count(*) < {{ var('events_rows') }}
    or (count(*) - {{ var('events_rows') }}) % {{ var('events_increment') }} != 0
