package io.dbtqbeast.bridge;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One procedure of {@link QbeastProcedures}: its parameters as the Python side declares them,
 * and a call that hands the arguments to the engine and returns its rows as a local result.
 */
final class SqlProcedure implements UnboundProcedure, BoundProcedure {
  private final String name;
  private final String description;
  private final List<String> names = new ArrayList<>();
  private final List<String> types = new ArrayList<>();
  private final ProcedureParameter[] parameters;

  SqlProcedure(JsonNode declaration) {
    this.name = declaration.get("name").asText();
    this.description = declaration.path("description").asText("");
    List<ProcedureParameter> declared = new ArrayList<>();
    for (JsonNode parameter : declaration.get("parameters")) {
      String parameterName = parameter.get("name").asText();
      String type = parameter.get("type").asText();
      ProcedureParameter.Builder builder = ProcedureParameter.in(parameterName, sparkType(type));
      JsonNode fallback = parameter.get("default");
      if (fallback != null && !fallback.isNull()) {
        builder = builder.defaultValue(fallback.asText());
      }
      declared.add(builder.build());
      names.add(parameterName);
      types.add(type);
    }
    this.parameters = declared.toArray(new ProcedureParameter[0]);
  }

  private static DataType sparkType(String type) {
    switch (type) {
      case "string":
        return DataTypes.StringType;
      case "long":
        return DataTypes.LongType;
      case "double":
        return DataTypes.DoubleType;
      case "boolean":
        return DataTypes.BooleanType;
      case "map":
        return DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType);
      default:
        throw new IllegalStateException("qbeast bridge: unknown procedure parameter type " + type);
    }
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    return this;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return parameters.clone();
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    Map<String, Object> arguments = new LinkedHashMap<>();
    for (int i = 0; i < names.size(); i++) {
      Object value = null;
      if (!input.isNullAt(i)) {
        switch (types.get(i)) {
          case "string":
            value = input.getUTF8String(i).toString();
            break;
          case "long":
            value = input.getLong(i);
            break;
          case "double":
            value = input.getDouble(i);
            break;
          case "map":
            value = stringMap(input.getMap(i));
            break;
          default:
            value = input.getBoolean(i);
        }
      }
      arguments.put(names.get(i), value);
    }
    JsonNode answer = Json.answer(
        Bridge.procedures().call(name, Json.write(arguments), SparkSession.active()), "call " + name);
    return Collections.<Scan>singletonList(new Result(answer)).iterator();
  }

  private static Map<String, String> stringMap(MapData map) {
    Map<String, String> out = new LinkedHashMap<>();
    ArrayData keys = map.keyArray();
    ArrayData values = map.valueArray();
    for (int i = 0; i < map.numElements(); i++) {
      out.put(keys.getUTF8String(i).toString(), values.isNullAt(i) ? null : values.getUTF8String(i).toString());
    }
    return out;
  }

  /** The rows a procedure returned, as Spark's local result of a {@code CALL}. */
  private static final class Result implements LocalScan {
    private final StructType schema;
    private final InternalRow[] rows;

    Result(JsonNode answer) {
      List<StructField> fields = new ArrayList<>();
      List<String> columnTypes = new ArrayList<>();
      for (JsonNode column : answer.get("columns")) {
        String type = column.get("type").asText();
        fields.add(DataTypes.createStructField(column.get("name").asText(), sparkType(type), true));
        columnTypes.add(type);
      }
      this.schema = DataTypes.createStructType(fields);
      List<InternalRow> out = new ArrayList<>();
      for (JsonNode row : answer.get("rows")) {
        Object[] values = new Object[columnTypes.size()];
        for (int i = 0; i < values.length; i++) {
          JsonNode cell = row.get(i);
          if (cell == null || cell.isNull()) {
            continue;
          }
          switch (columnTypes.get(i)) {
            case "string":
              values[i] = UTF8String.fromString(cell.asText());
              break;
            case "long":
              values[i] = cell.asLong();
              break;
            case "double":
              values[i] = cell.asDouble();
              break;
            default:
              values[i] = cell.asBoolean();
          }
        }
        out.add(new GenericInternalRow(values));
      }
      this.rows = out.toArray(new InternalRow[0]);
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public InternalRow[] rows() {
      return rows.clone();
    }
  }
}
