{#
  materialized='qbeast': the model's result written by the qbeast engine as a Qbeast table (an
  OTree-indexed Delta table) and registered in the catalog as an external `USING qbeast` table.

  Without incremental_strategy the table is rebuilt on every run, like a `table` model (one
  overwrite commit: the previous version stays readable for time travel). With
  incremental_strategy='append', 'merge' or 'delete+insert' (the last two need unique_key) later
  runs append, upsert or replace the rows of the model's keys, and is_incremental() is true.
  The strategies live in dbt/adapters/qbeast/model_config.py (INCREMENTAL_STRATEGIES).
  dbt-spark's spelling (materialized='table' or 'incremental' with file_format='qbeast') lands
  here too (switch_materialization.sql).

  config: columns_to_index (required; alias columnsToIndex), cube_size (alias cubeSize),
  incremental_strategy, unique_key, incremental_predicates, merge_update_columns,
  merge_exclude_columns, location_root, take_over_location, column_stats, non_finite,
  on_schema_change, tblproperties, persist_docs, optimize_after_run, contract, sql_header.
  See docs/dbt.md.
#}
{% materialization qbeast, adapter='qbeast', supported_languages=['sql', 'python'] %}
  {%- set language = model['language'] -%}
  {%- set identifier = model['alias'] -%}
  {%- set qbeast_config = adapter.qbeast_model_config(model) -%}
  {%- for note in qbeast_config.warnings -%}
    {% do exceptions.warn(note) %}
  {%- endfor -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = api.Relation.create(identifier=identifier, schema=schema,
                                                database=database, type='table') -%}
  {%- set incremental = not should_full_refresh() and adapter.qbeast_is_incremental(model, old_relation) -%}

  {{ run_hooks(pre_hooks) }}

  {%- set code = compiled_code -%}
  {%- if language == 'sql' -%}
    {%- set sql_header = config.get('sql_header', none) -%}
    {%- if sql_header -%}
      {% call statement('qbeast_sql_header') %}{{ sql_header }}{% endcall %}
    {%- endif -%}
    {%- if config.get('contract').enforced -%}
      {#- the query's column names and types must be the contract's, as for dbt-spark's table -#}
      {{ get_assert_columns_equivalent(compiled_code) }}
      {%- set code = get_select_subquery(compiled_code) -%}
    {%- endif -%}
  {%- endif -%}
  {%- set response = adapter.qbeast_write(model, target_relation, old_relation, code,
                                           qbeast_config, incremental, flags.EMPTY) -%}
  {% do store_result('main', response=response) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#-
  is_incremental() of a qbeast model is true only when it sets an incremental strategy
  (incremental_strategy='append'; the deprecated write_mode='append' counts) and its Qbeast table
  exists at the location its config names. A qbeast model without a strategy rebuilds its table,
  so is_incremental() is false for it, as for a `table` model.
-#}
{% macro is_incremental() %}
  {%- if not execute -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {%- if relation is none or relation.type != 'table' or should_full_refresh() -%}
    {{ return(false) }}
  {%- endif -%}
  {%- if adapter.qbeast_is_qbeast_model(model) -%}
    {{ return(adapter.qbeast_is_incremental(model, relation)) }}
  {%- endif -%}
  {#- an incremental model over a Qbeast table (just switched from qbeast) is rebuilt first -#}
  {{ return(model.config.materialized == 'incremental' and not relation.is_qbeast) }}
{% endmacro %}
