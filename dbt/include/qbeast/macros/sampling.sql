{#
  qbeast_sample(relation, fraction): a Qbeast model read as a sample of about `fraction` of its
  rows, e.g. `select count(*) * 10 from {{ qbeast_sample(ref('events'), 0.1) }}`.

  Expands to `(select * from <relation> where hash(<indexed columns>) < <Weight(fraction)>)`:
  exactly the rows of the engine's sample(fraction) (docs/reading.md). It is a row filter, not a
  table option, because Spark may share one relation between the references to a table in a
  query; the read path prunes the files by it. The fraction must be a number in (0, 1]; the
  relation must be a qbeast table (anything else is refused: its rows have no weight).
#}
{% macro qbeast_sample(relation, fraction) %}
  {%- if fraction is boolean or fraction is not number or not (0 < fraction <= 1) -%}
    {{ exceptions.raise_compiler_error(
         "qbeast_sample: invalid fraction " ~ (fraction | tojson)
         ~ " for " ~ relation ~ "; allowed values: a number in (0, 1], e.g. 0.1") }}
  {%- endif -%}
  {%- if execute -%}
    (select * from {{ relation }} where {{ adapter.qbeast_sample_predicate(relation, fraction) }})
  {%- else -%}
    {{ relation }}
  {%- endif -%}
{%- endmacro %}


{#
  qbeast_approx(relation, aggregates, group_by=none, filter=none, tolerance=0.01,
                confidence=0.95, max_fraction=1.0): an approximate aggregate of a qbeast model
  as a relation, e.g.

    select * from {{ qbeast_approx(ref('events'), ['count(*)', 'avg(price)'],
                                   group_by=['country'], tolerance=0.01) }}

  The engine's QbeastTable.approx runs when the model is built (reading only the weight bands
  the tolerance needs) and the answer is inlined: one row per group and aggregate with the group
  columns, aggregate, estimate, low, high, fraction, rows_read, bytes_read, tolerance_met and
  reason (docs/approx.md). Aggregates: count(*), count(col), sum(col), avg(col).
#}
{% macro qbeast_approx(relation, aggregates, group_by=none, filter=none, tolerance=0.01,
                       confidence=0.95, max_fraction=1.0) %}
  {%- if execute -%}
    {%- set location = qbeast__location('qbeast_approx', relation) -%}
    {{ adapter.qbeast_approx(location, aggregates, group_by, filter, tolerance, confidence,
                             max_fraction, as_sql=true) }}
  {%- else -%}
    {{ relation }}
  {%- endif -%}
{%- endmacro %}


{#
  The columns of a relation: `describe extended` of the relation's name. dbt-spark renders the
  relation as SQL text, which for a ref() in a sampled run (`qbeast_sample` var), under `--empty`
  or under dbt's `--sample` is a subquery that `describe` cannot take; the name is the same table.
#}
{% macro qbeast__get_columns_in_relation_raw(relation) -%}
  {% call statement('get_columns_in_relation_raw', fetch_result=True) %}
      describe extended {{ relation.render() }}
  {% endcall %}
  {% do return(load_result('get_columns_in_relation_raw').table) %}
{% endmacro %}


{#
  dbt-spark's persist_docs, then the sampled-build mark (`qbeast_sample` var) of what a table,
  view, incremental or snapshot materialization just built: every one of them ends with
  persist_docs. A qbeast model carries the mark in its catalog registration instead.
#}
{% macro qbeast__persist_docs(relation, model, for_relation=true, for_columns=true) -%}
  {{ spark__persist_docs(relation, model, for_relation, for_columns) }}
  {%- do adapter.qbeast_mark_sample(relation, model) -%}
{%- endmacro %}
