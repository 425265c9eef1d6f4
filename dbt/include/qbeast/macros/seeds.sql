{#
  Seeds: each column's type is worked out once (column_types, else dbt's inference, as
  dbt-spark types them), and the rows are loaded by adapter.qbeast_load_seed in one Spark job
  (dbt/adapters/qbeast/seeds.py). dbt-spark's loader worked out a numeric column's type again for
  every cell (a scan of the whole column each time) and sent the rows as SQL VALUES batches.
  Over method: thrift (no Spark session in dbt's process) the rows still go as SQL statements,
  with the types worked out once.
#}
{% macro qbeast__load_csv_rows(model, agate_table) %}
  {%- set types = qbeast__seed_column_types(model, agate_table) -%}
  {%- set loaded = adapter.qbeast_load_seed(this, agate_table, types) -%}
  {%- if loaded is not none -%}
    {{ return("insert into " ~ this.render() ~ " -- " ~ loaded ~ " rows of the seed file in one Spark job, cast to "
              ~ types | join(", ")) }}
  {%- endif -%}

  {%- set statements = [] -%}
  {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
    {%- set bindings = [] -%}
    {%- for row in chunk -%}
      {%- do bindings.extend(row) -%}
    {%- endfor -%}
    {%- set sql -%}
      insert into {{ this.render() }} values
      {% for row in chunk -%}
        ({%- for type in types -%}
          cast({{ get_binding_char() }} as {{ type }}){%- if not loop.last -%},{%- endif -%}
        {%- endfor -%}){%- if not loop.last -%},{%- endif %}
      {% endfor %}
    {%- endset -%}
    {%- do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) -%}
    {%- if loop.index0 == 0 -%}
      {%- do statements.append(sql) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(statements[0] if statements else "") }}
{% endmacro %}


{#
  A seed with file_format='qbeast' is a Qbeast table (config columns_to_index, cube_size,
  location_root), rebuilt by the engine on every `dbt seed` in one commit; the rows are typed as a
  plain seed's are (adapter.qbeast_seed). Other seeds are dbt's own seed materialization.
#}
{% materialization seed, adapter='qbeast' %}
  {%- if not adapter.qbeast_has_qbeast_file_format(model) -%}
    {{ return(materialization_seed_default()) }}
  {%- endif -%}
  {%- set identifier = model['alias'] -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- if old_relation is not none and old_relation.is_view -%}
    {{ exceptions.raise_compiler_error("Cannot seed to '{}', it is a view".format(old_relation.render())) }}
  {%- endif -%}
  {%- set target_relation = api.Relation.create(identifier=identifier, schema=schema,
                                                database=database, type='table') -%}
  {%- set agate_table = load_agate_table() -%}
  {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}
  {%- set types = qbeast__seed_column_types(model, agate_table) -%}

  {{ run_hooks(pre_hooks) }}
  {%- set response = adapter.qbeast_seed(model, target_relation, old_relation, agate_table, types) -%}
  {% do store_result('main', response=response) %}
  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- the SQL type of each seed column: column_types, else dbt's inference as dbt-spark words it -#}
{% macro qbeast__seed_column_types(model, agate_table) %}
  {%- set column_override = model['config'].get('column_types', {}) -%}
  {%- set types = [] -%}
  {%- for col_name in agate_table.column_names -%}
    {%- do types.append(column_override.get(col_name) or adapter.convert_type(agate_table, loop.index0)) -%}
  {%- endfor -%}
  {{ return(types) }}
{% endmacro %}
