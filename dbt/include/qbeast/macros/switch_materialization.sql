{#
  `table`, `view` and `incremental` on the qbeast adapter: dbt-spark's, except when the existing
  relation is a Qbeast table (the model was `qbeast` before).

  dbt-spark drops the old relation first and then builds the new one, so a failing query would
  leave no relation at all, and a Qbeast table at the managed folder would make Spark refuse the
  new table. Over a Qbeast table the new relation is therefore built as `<name>__dbt_tmp` and
  swapped in only once it exists (adapter.qbeast_swap_in: the Qbeast table is renamed to a backup,
  its folder moved away if the new table needs it, the new relation renamed, the backup dropped;
  each step undone if a later one fails).

  With file_format='qbeast', `table` and `incremental` are the qbeast materialization (dbt-spark's
  spelling of a qbeast model; adapter.qbeast_is_qbeast_model decides).

  `table` is written out here rather than delegated to dbt-spark's: dbt runs a Python model only
  from a statement called directly by the materialization, and Python `table` models run on the
  embedded session (adapter.submit_python_job), with Spark's default format (parquet).
#}

{% materialization table, adapter='qbeast', supported_languages=['sql', 'python'] %}
  {%- if adapter.qbeast_is_qbeast_model(model) -%}
    {#- dbt-spark's spelling of a qbeast model: file_format='qbeast' -#}
    {{ return(materialization_qbeast_qbeast()) }}
  {%- endif -%}
  {% do adapter.qbeast_check_plain_location(model) %}
  {%- set language = model['language'] -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                database=database, type='table') -%}
  {%- set swap = old_relation is not none and old_relation.is_qbeast -%}
  {%- set build_relation = make_intermediate_relation(target_relation) if swap else target_relation -%}

  {{ run_hooks(pre_hooks) }}

  {%- if swap -%}
    {% do qbeast_drop_leftover(build_relation) %}
  {%- elif old_relation is not none -%}
    {#- dbt-spark's behaviour for a plain table or view: drop, then create -#}
    {{ adapter.drop_relation(old_relation) }}
  {%- endif -%}

  {%- call statement('main', language=language) -%}
    {{ qbeast_build_table_as(build_relation, compiled_code, language) }}
  {%- endcall -%}
  {%- if swap -%}
    {% do adapter.qbeast_swap_in(old_relation, build_relation, target_relation) %}
  {%- endif -%}

  {% do apply_grants(target_relation, grant_config, should_revoke=should_revoke(old_relation, full_refresh_mode=True)) %}
  {% do persist_docs(target_relation, model) %}
  {% do persist_constraints(target_relation, model) %}
  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{% materialization view, adapter='qbeast' %}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- if old_relation is none or not old_relation.is_qbeast -%}
    {{ return(materialization_view_spark()) }}
  {%- endif -%}
  {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                database=database, type='view') -%}
  {%- set build_relation = make_intermediate_relation(target_relation) -%}

  {{ run_hooks(pre_hooks) }}
  {% do qbeast_drop_leftover(build_relation) %}
  {%- call statement('main') -%}
    {{ get_create_view_as_sql(build_relation, sql) }}
  {%- endcall -%}
  {% do adapter.qbeast_swap_in(old_relation, build_relation, target_relation) %}
  {% do apply_grants(target_relation, config.get('grants'), should_revoke=True) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{% materialization incremental, adapter='qbeast', supported_languages=['sql', 'python'] %}
  {%- if adapter.qbeast_is_qbeast_model(model) -%}
    {#- dbt-spark's spelling of a qbeast model: file_format='qbeast' (strategy: merge with a
        unique_key, else append, unless incremental_strategy says otherwise) -#}
    {{ return(materialization_qbeast_qbeast()) }}
  {%- endif -%}
  {% do adapter.qbeast_check_plain_location(model) %}
  {%- if model['language'] == 'python' -%}
    {{ exceptions.raise_compiler_error(
         "model " ~ model['name'] ~ ": Python incremental models are not supported by the qbeast "
         ~ "adapter; use materialized='qbeast' with incremental_strategy='append', or "
         ~ "materialized='table'") }}
  {%- endif -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- if old_relation is not none and old_relation.is_qbeast -%}
    {#- the first incremental run over a former qbeast model builds the table in full -#}
    {{ return(materialization_table_qbeast()) }}
  {%- endif -%}
  {%- if flags.EMPTY and old_relation is not none and old_relation.type == 'table' and not should_full_refresh() -%}
    {#- dbt's --empty checks the SQL and changes no row of an existing table: dbt-spark's
        insert_overwrite (and its microbatch) would replace the table's or the window's rows
        with the no rows every ref reads -#}
    {{ run_hooks(pre_hooks) }}
    {%- call statement('main') -%}
      {{ get_empty_subquery_sql(compiled_code) }}
    {%- endcall -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [old_relation]}) }}
  {%- endif -%}
  {{ return(materialization_incremental_spark()) }}
{% endmaterialization %}


{% macro qbeast_drop_leftover(relation) %}
  {#- a `__dbt_tmp` relation an interrupted earlier run left behind -#}
  {%- set leftover = adapter.get_relation(database=relation.database, schema=relation.schema,
                                          identifier=relation.identifier) -%}
  {%- if leftover is not none -%}
    {% do adapter.drop_relation(leftover) %}
  {%- endif -%}
{% endmacro %}


{#- dbt-spark's create_table_as, except that a location_root places an intermediate table under
    its own name (dbt-spark's location clause always uses the model's alias, where the Qbeast
    table being replaced may still live) -#}
{% macro qbeast_build_table_as(relation, compiled_code, language) %}
  {%- set location_root = config.get('location_root', validator=validation.any[basestring]) -%}
  {%- if language == 'python' or location_root is none or relation.identifier == model['alias'] -%}
    {{ create_table_as(False, relation, compiled_code, language) }}
  {%- else -%}
    create table {{ relation }}
    {%- if config.get('contract').enforced -%}
      {{ get_assert_columns_equivalent(compiled_code) }}
      {%- set compiled_code = get_select_subquery(compiled_code) %}
    {%- endif %}
    {{ file_format_clause() }}
    {{ options_clause() }}
    {{ tblproperties_clause() }}
    {{ partition_cols(label="partitioned by") }}
    {{ clustered_cols(label="clustered by") }}
    location '{{ location_root }}/{{ relation.identifier }}'
    {{ comment_clause() }}
    as
    {{ compiled_code }}
  {%- endif -%}
{% endmacro %}


{#-
  Constraints are declared NOT_ENFORCED (as dbt-spark declares them): dbt checks a contract's
  columns and types before the build and warns about the constraints. dbt-spark then issues
  `ALTER TABLE ... CHANGE COLUMN ... SET NOT NULL` and `ADD CONSTRAINT` on any model whose
  file_format is delta *or unset*, which Spark refuses for the parquet tables an unset
  file_format gives here (Delta's jars are absent), and a Qbeast table's writers do not enforce
  Delta's CHECK constraints: nothing is altered.
-#}
{% macro qbeast__persist_constraints(relation, model) %}
{% endmacro %}
