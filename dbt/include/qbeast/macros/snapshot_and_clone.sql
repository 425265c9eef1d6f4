{#
  `dbt snapshot` with file_format='qbeast': the snapshot is a Qbeast table (config
  columns_to_index, default the snapshot's unique_key columns; cube_size). dbt's snapshot
  strategies (timestamp, check, hard_deletes) build the rows as for any adapter; the engine
  writes them:

  - first run: dbt's build_snapshot_table query, written as a new Qbeast table (one commit);
  - later runs: dbt's staging rows (dbt-spark's staging view), merged on dbt_scd_id in one
    commit (adapter.qbeast_snapshot: QbeastTable.merge, the shape of dbt-spark's snapshot merge:
    current target rows whose record changed or vanished get their dbt_valid_to, new versions
    are inserted). New source columns are added to the table first.

  Other file formats keep dbt-spark's snapshot materialization.
#}
{% materialization snapshot, adapter='qbeast' %}
  {%- if not adapter.qbeast_has_qbeast_file_format(model) -%}
    {{ return(materialization_snapshot_spark()) }}
  {%- endif -%}
  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set strategy_name = config.get('strategy') -%}
  {%- set snapshot_config = adapter.qbeast_snapshot_config(model) -%}
  {% set target_relation_exists, target_relation = get_or_create_relation(
          database=none, schema=model.schema, identifier=target_table, type='table') -%}
  {%- if target_relation_exists and not target_relation.is_qbeast -%}
    {% do exceptions.raise_compiler_error(
         "snapshot " ~ model['name'] ~ ": the existing relation " ~ target_relation
         ~ " is not a Qbeast table; drop it (or choose another target) to snapshot with "
         ~ "file_format='qbeast'") %}
  {%- endif -%}
  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% set strategy_macro = strategy_dispatch(strategy_name) %}
  {% set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) %}
  {% set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() %}

  {% if not target_relation_exists %}
    {% set response = adapter.qbeast_snapshot(model, target_relation, none,
                                              build_snapshot_table(strategy, model['compiled_code']),
                                              snapshot_config, columns) %}
  {% else %}
    {{ adapter.valid_snapshot_target(target_relation, columns) }}
    {% set staging_table = spark_build_snapshot_staging_table(strategy, sql, target_relation) %}
    {% set response = adapter.qbeast_snapshot(model, target_relation, staging_table, none,
                                              snapshot_config, columns) %}
  {% endif %}
  {% do store_result('main', response=response) %}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {% if staging_table is defined %}
    {% do post_snapshot(staging_table) %}
  {% endif %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#
  `dbt clone` of a Qbeast table: a new external catalog table `USING qbeast` over the same folder
  (adapter.qbeast_clone, the engine's qbeast.create_table), so the clone reads the original's
  files without copying them, like a shallow clone. A later `dbt run` of the model in the clone's
  target writes its own table at its own location and never into the original's folder. Other
  relations keep dbt's clone behaviour (Spark cannot clone them: a view of the original).
#}
{%- materialization clone, adapter='qbeast' -%}
  {%- set other = load_cached_relation(defer_relation) if defer_relation else none -%}
  {%- if other is none or not other.is_qbeast -%}
    {{ return(materialization_clone_default()) }}
  {%- endif -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- if existing_relation and not flags.FULL_REFRESH -%}
    {{ log("Relation " ~ existing_relation ~ " already exists", info=True) }}
    {{ return({'relations': []}) }}
  {%- endif -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- if target_relation.render() == other.render() -%}
    {{ log("Target relation and defer relation are the same, skipping clone for relation: " ~ target_relation.render()) }}
    {{ return({'relations': []}) }}
  {%- endif -%}
  {% set response = adapter.qbeast_clone(other, target_relation, existing_relation) %}
  {% do store_result('main', response=response) %}
  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization -%}


{#- dbt-spark clones tables with Delta's `shallow clone`, which needs Delta's jars (absent here):
    a plain table is cloned as dbt's fallback, a view of the original; Qbeast tables are cloned
    by the clone materialization above. -#}
{% macro qbeast__can_clone_table() %}
  {{ return(False) }}
{% endmacro %}
