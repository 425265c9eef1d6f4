{#
  Python `table` models on the qbeast adapter run in the dbt process, on its Spark session
  (adapter.submit_python_job); the table is written in the model's file_format or Spark's
  default (parquet), since the embedded session has no Delta Lake jars (dbt-spark's default).
#}
{% macro py_write_table(compiled_code, target_relation) %}
{{ compiled_code }}
# --- written by dbt-qbeast: the model runs in the dbt process, on its Spark session --- #
from dbt.adapters.qbeast.python_models import to_spark_dataframe
df = to_spark_dataframe(spark, model(dbtObj(spark.table), spark), "{{ model['name'] }}")
df.write.mode("overwrite").format("{{ config.get('file_format', 'parquet') }}").saveAsTable("{{ target_relation }}")
{%- endmacro -%}


{#
  grants: the embedded Spark catalog has no access control, so a model that asks for grants fails
  with a message saying so (dbt-spark would send SHOW GRANTS, which Spark does not parse).
#}
{% macro qbeast__apply_grants(relation, grant_config, should_revoke=True) %}
  {%- if grant_config -%}
    {{ exceptions.raise_compiler_error(
         "model " ~ model['name'] ~ ": config grants=" ~ (grant_config | tojson)
         ~ " cannot be applied: the qbeast adapter's Spark catalog has no access control; "
         ~ "remove grants for this target") }}
  {%- endif -%}
{% endmacro %}
