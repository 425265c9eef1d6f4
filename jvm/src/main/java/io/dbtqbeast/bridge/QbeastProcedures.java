package io.dbtqbeast.bridge;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A catalog of stored procedures, the engine's table operations for SQL clients:
 * {@code CALL qbeast_system.optimize(table => 'events')}.
 *
 * <p>Registered as {@code spark.sql.catalog.qbeast_system}; it holds procedures only (no tables),
 * and every procedure runs in the driver's Python engine through {@link Procedures}. A catalog of
 * its own name, not {@code qbeast}, so that a database called {@code qbeast} keeps resolving.
 */
public final class QbeastProcedures implements ProcedureCatalog {
  private String name = "qbeast_system";

  @Override
  public void initialize(String catalogName, CaseInsensitiveStringMap options) {
    this.name = catalogName;
  }

  @Override
  public String name() {
    return name;
  }

  private static JsonNode procedures() {
    return Json.answer(Bridge.procedures().catalog(), "procedures").get("procedures");
  }

  @Override
  public UnboundProcedure loadProcedure(Identifier ident) {
    List<String> known = new ArrayList<>();
    if (ident.namespace().length == 0 || (ident.namespace().length == 1 && "system".equals(ident.namespace()[0]))) {
      for (JsonNode procedure : procedures()) {
        if (procedure.get("name").asText().equalsIgnoreCase(ident.name())) {
          return new SqlProcedure(procedure);
        }
        known.add(procedure.get("name").asText());
      }
    } else {
      for (JsonNode procedure : procedures()) {
        known.add(procedure.get("name").asText());
      }
    }
    throw new IllegalArgumentException(
        "qbeast: no procedure " + String.join(".", ident.namespace()) + (ident.namespace().length > 0 ? "." : "")
            + ident.name() + " in catalog " + name + "; procedures: " + String.join(", ", known)
            + " (call them as " + name + ".<procedure>(...))");
  }

  @Override
  public Identifier[] listProcedures(String[] namespace) {
    List<Identifier> out = new ArrayList<>();
    for (JsonNode procedure : procedures()) {
      out.add(Identifier.of(new String[0], procedure.get("name").asText()));
    }
    return out.toArray(new Identifier[0]);
  }
}
