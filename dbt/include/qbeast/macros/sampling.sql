{#
  qbeast_sample(relation, fraction): a Qbeast model read as a sample of about `fraction` of its
  rows, e.g. `select count(*) * 10 from {{ qbeast_sample(ref('events'), 0.1) }}`.

  Expands to `<relation> with ('sampleFraction' = '<fraction>')`, the table-options syntax the
  qbeast data source reads (docs/reading.md); the reader then only opens the files whose cubes
  hold rows of the sample. The fraction must be a number in (0, 1]; it is rendered from the
  number itself, so nothing else can reach the SQL text.
#}
{% macro qbeast_sample(relation, fraction) %}
  {%- if fraction is boolean or fraction is not number or not (0 < fraction <= 1) -%}
    {{ exceptions.raise_compiler_error(
         "qbeast_sample: invalid fraction " ~ (fraction | tojson)
         ~ " for " ~ relation ~ "; allowed values: a number in (0, 1], e.g. 0.1") }}
  {%- endif -%}
  {{ relation }} with ('sampleFraction' = '{{ fraction | float }}')
{%- endmacro %}
