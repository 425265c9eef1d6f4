-- Events with their dimension names and revenue; ephemeral, so it is inlined into the marts.
select
    e.event_id,
    e.event_time,
    cast(e.event_time as date) as event_date,
    e.user_id,
    e.session_id,
    e.device,
    e.product_id,
    c.country_code,
    c.country_name,
    c.region,
    p.category_name,
    p.department,
    t.event_type,
    t.funnel_step,
    t.is_conversion,
    e.price,
    e.quantity,
    e.price * e.quantity as revenue
from {{ ref('events') }} e
join {{ ref('countries') }} c on e.country_id = c.country_id
join {{ ref('product_categories') }} p on e.category_id = p.category_id
join {{ ref('event_types') }} t on e.event_type_id = t.event_type_id
