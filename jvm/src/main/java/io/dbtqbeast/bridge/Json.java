package io.dbtqbeast.bridge;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** JSON across the Py4J boundary (Jackson ships with Spark); planner errors become exceptions. */
final class Json {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private Json() {}

  static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("qbeast bridge: cannot encode " + value, e);
    }
  }

  /** Parses a planner answer; an {@code "error"} key raises it as the user's error message. */
  static JsonNode answer(String text, String call) {
    JsonNode node;
    try {
      node = MAPPER.readTree(text == null ? "null" : text);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("qbeast bridge: the planner's " + call + " answer is not JSON: " + text, e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalStateException("qbeast bridge: the planner's " + call + " answer is not an object: " + text);
    }
    JsonNode error = node.get("error");
    if (error != null && !error.isNull()) {
      throw new IllegalArgumentException(error.asText());
    }
    return node;
  }
}
