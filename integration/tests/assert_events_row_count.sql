-- The click stream has exactly `events_rows` rows (fails with one row otherwise).
select count(*) as actual_rows
from {{ ref('events') }}
having count(*) != {{ var('events_rows') }}
