{#
  dbt run-operation macros over the qbeast table API (docs/dbt.md, "Run-operations").

  Each takes `relation_or_path`: a model name (looked up in the project graph), `schema.table`,
  a relation (e.g. ref('events') when called from another macro) or a table folder (any value
  with '/' or ':' in it). Arguments go to @available adapter methods as values, never into SQL.
#}

{% macro qbeast__location(operation, relation_or_path) %}
  {%- if relation_or_path is string -%}
    {%- set target = relation_or_path | trim -%}
    {%- if '/' in target or ':' in target -%}
      {{ return(adapter.qbeast_table_location(operation, target)) }}
    {%- elif '.' in target -%}
      {%- set parts = target.split('.') -%}
      {{ return(adapter.qbeast_table_location(operation, parts[-2], parts[-1])) }}
    {%- else -%}
      {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.name == target -%}
        {{ return(adapter.qbeast_table_location(operation, node.schema, node.alias or node.name)) }}
      {%- endfor -%}
      {{ exceptions.raise_compiler_error(
           adapter.qbeast_operation_words(operation) ~ ": invalid argument relation_or_path=" ~ (target | tojson)
           ~ "; allowed values: a model name of this project, schema.identifier, a relation or a table path") }}
    {%- endif -%}
  {%- elif relation_or_path is not none and relation_or_path.identifier is defined -%}
    {{ return(adapter.qbeast_table_location(operation, relation_or_path.schema, relation_or_path.identifier)) }}
  {%- else -%}
    {{ exceptions.raise_compiler_error(
         adapter.qbeast_operation_words(operation) ~ ": invalid argument relation_or_path=" ~ (relation_or_path | string)
         ~ "; allowed values: a model name of this project, schema.identifier, a relation or a table path") }}
  {%- endif -%}
{% endmacro %}


{% macro qbeast_optimize(relation_or_path, revision_id=none, fraction=1.0, files=none) %}
  {%- set location = qbeast__location('qbeast_optimize', relation_or_path) -%}
  {{ return(adapter.qbeast_optimize(location, revision_id, fraction, files)) }}
{% endmacro %}


{% macro qbeast_convert(path, columns_to_index, cube_size=none, source_format=none) %}
  {{ return(adapter.qbeast_convert(path, columns_to_index, cube_size, source_format)) }}
{% endmacro %}


{% macro qbeast_upgrade_format(relation_or_path, dry_run=false) %}
  {%- set location = qbeast__location('qbeast_upgrade_format', relation_or_path) -%}
  {{ return(adapter.qbeast_upgrade_format(location, dry_run)) }}
{% endmacro %}


{#- allow_short_retention: the engine refuses retention_hours under 168 unless this is true -#}
{% macro qbeast_vacuum(relation_or_path, retention_hours=168, dry_run=false, allow_short_retention=false) %}
  {%- set location = qbeast__location('qbeast_vacuum', relation_or_path) -%}
  {{ return(adapter.qbeast_vacuum(location, retention_hours, dry_run, allow_short_retention)) }}
{% endmacro %}


{% macro qbeast_index_metrics(relation_or_path, revision_id=none) %}
  {%- set location = qbeast__location('qbeast_index_metrics', relation_or_path) -%}
  {{ return(adapter.qbeast_index_metrics(location, revision_id)) }}
{% endmacro %}


{#- what a read with `filter` (SQL text) sampled to `fraction` opens, and why -#}
{% macro qbeast_explain_read(relation_or_path, filter=none, fraction=none) %}
  {%- set location = qbeast__location('qbeast_explain_read', relation_or_path) -%}
  {{ return(adapter.qbeast_explain_read(location, filter, fraction)) }}
{% endmacro %}


{#-
  A Qbeast table written outside this project (by Spark jobs, qbeast-spark or qbeast_convert)
  registered in the catalog as `relation` (schema.table), so models read it with source().
  An existing relation of that name is refused unless it already is this very table.
-#}
{% macro qbeast_register_table(path, relation) %}
  {%- if relation is not string or relation.split('.') | length != 2 -%}
    {{ exceptions.raise_compiler_error(
         "run-operation qbeast_register_table: invalid argument relation=" ~ (relation | tojson)
         ~ "; allowed values: schema.table, e.g. raw.clicks") }}
  {%- endif -%}
  {%- set parts = relation.split('.') -%}
  {{ return(adapter.qbeast_register_table(path, parts[0] | trim, parts[1] | trim)) }}
{% endmacro %}


{#-
  Every source table whose meta names a Qbeast folder (`meta: {qbeast_location: <folder>}`)
  registered as <source schema>.<table>, so `dbt run-operation qbeast_register_sources` once
  makes a project's Qbeast sources readable.
-#}
{% macro qbeast_register_sources() %}
  {%- set registered = [] -%}
  {%- for node in graph.sources.values() if node.meta.get('qbeast_location') -%}
    {%- do registered.append(adapter.qbeast_register_table(
          node.meta['qbeast_location'], node.schema, node.identifier)) -%}
  {%- endfor -%}
  {%- if not registered -%}
    {{ log("qbeast_register_sources: no source table has meta.qbeast_location", info=true) }}
  {%- endif -%}
  {{ return(registered) }}
{% endmacro %}


{#-
  Print an approximate aggregate (QbeastTable.approx), e.g.
  dbt run-operation qbeast_approx_print --args "{relation_or_path: events, aggregates: ['sum(price)'], group_by: [country], tolerance: 0.01}"
-#}
{% macro qbeast_approx_print(relation_or_path, aggregates, group_by=none, filter=none, tolerance=0.01,
                             confidence=0.95, max_fraction=1.0) %}
  {%- set location = qbeast__location('qbeast_approx_print', relation_or_path) -%}
  {{ return(adapter.qbeast_approx(location, aggregates, group_by, filter, tolerance, confidence,
                                  max_fraction)) }}
{% endmacro %}
