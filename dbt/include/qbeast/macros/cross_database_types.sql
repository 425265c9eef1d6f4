{#
  dbt's `type_float()` is the cross-database "floating point number": a 64-bit double on BigQuery,
  Snowflake, Postgres and Athena. Spark's `float` is 32 bits, so the default rendering would round
  every value a model casts with it (1.2345 becomes 1.2345000505447388); the qbeast adapter
  renders it as Spark's 64-bit `double`.
#}
{% macro qbeast__type_float() %}
    double
{% endmacro %}
