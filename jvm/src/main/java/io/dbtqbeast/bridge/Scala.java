package io.dbtqbeast.bridge;

import java.util.List;
import java.util.Map;

import scala.Function1;
import scala.runtime.AbstractPartialFunction;

/** The few Scala conversions the bridge needs, in one place. */
final class Scala {
  private Scala() {}

  static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
    return scala.jdk.javaapi.CollectionConverters.asScala(list).toList();
  }

  static <T> List<T> list(scala.collection.Seq<T> seq) {
    return scala.jdk.javaapi.CollectionConverters.asJava(seq);
  }

  static <K, V> Map<K, V> map(scala.collection.Map<K, V> map) {
    return scala.jdk.javaapi.CollectionConverters.asJava(map);
  }

  static <K, V> scala.collection.immutable.Map<K, V> immutableMap(Map<K, V> map) {
    return scala.collection.immutable.Map$.MODULE$.from(scala.jdk.javaapi.CollectionConverters.asScala(map));
  }

  @SuppressWarnings("unchecked")
  static <K, V> scala.collection.immutable.Map<K, V> emptyMap() {
    return (scala.collection.immutable.Map<K, V>) scala.collection.immutable.Map$.MODULE$.empty();
  }

  /**
   * A partial function from a Java function that returns {@code null} where it is not defined
   * (what {@code transform} / {@code transformUp} of Spark's trees take).
   */
  static <A, B> AbstractPartialFunction<A, B> partial(java.util.function.Function<A, B> f) {
    return new AbstractPartialFunction<A, B>() {
      @Override
      public boolean isDefinedAt(A x) {
        return f.apply(x) != null;
      }

      @Override
      @SuppressWarnings("unchecked")
      public <A1 extends A, B1> B1 applyOrElse(A1 x, Function1<A1, B1> otherwise) {
        B result = f.apply(x);
        return result != null ? (B1) result : otherwise.apply(x);
      }
    };
  }
}
