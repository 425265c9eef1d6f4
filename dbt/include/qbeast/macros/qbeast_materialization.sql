{#
  materialized='qbeast': the model's result written by the qbeast engine as a Qbeast table (an
  OTree-indexed Delta table) and registered in the catalog as an external `USING qbeast` table.

  config: columns_to_index (required; alias columnsToIndex), cube_size (alias cubeSize),
  write_mode ('append', the default, | 'overwrite'), location_root, column_stats, on_schema_change,
  tblproperties, persist_docs, optimize_after_run. See docs/dbt.md.
#}
{% materialization qbeast, adapter='qbeast', supported_languages=['sql'] %}
  {%- set identifier = model['alias'] -%}
  {%- set qbeast_config = adapter.qbeast_model_config(model) -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = api.Relation.create(identifier=identifier, schema=schema,
                                                database=database, type='table') -%}
  {%- set location = adapter.qbeast_location(target_relation, qbeast_config) -%}

  {{ run_hooks(pre_hooks) }}

  {#- Anything else under this name (a view, a plain table) makes way for the Qbeast table. -#}
  {%- set replaces_qbeast = old_relation is not none and old_relation.is_qbeast -%}
  {% if old_relation is not none and not replaces_qbeast %}
    {{ adapter.drop_relation(old_relation) }}
  {% endif %}

  {%- set append = qbeast_config.write_mode == 'append' and replaces_qbeast and not should_full_refresh() -%}
  {%- set response = adapter.qbeast_write(target_relation, compiled_code, qbeast_config, location,
                                           'append' if append else 'overwrite') -%}
  {% do store_result('main', response=response) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#-
  is_incremental() is also true for qbeast models once their table exists, unless they set
  write_mode='overwrite', so they can select only the new rows exactly like incremental models do.
-#}
{% macro is_incremental() %}
  {%- if not execute -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {%- if relation is none or relation.type != 'table' or should_full_refresh() -%}
    {{ return(false) }}
  {%- endif -%}
  {%- if model.config.materialized == 'incremental' -%}
    {{ return(true) }}
  {%- endif -%}
  {{ return(model.config.materialized == 'qbeast'
            and (model.config.get('write_mode') or 'append') | lower | trim == 'append'
            and relation.is_qbeast) }}
{% endmacro %}
