package io.dbtqbeast.bridge;

import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;
import org.sparkproject.connect.grpc.Status;

/**
 * Spark Connect calls of a server started with a shared secret must carry it, either as the
 * header {@code x-qbeast-token} (what a client on a plain connection sends: PySpark passes any
 * {@code ;name=value} parameter of its {@code sc://} URL as a header, while its own
 * {@code ;token=} parameter insists on TLS for a remote host) or as {@code Authorization: Bearer}
 * (a client behind a TLS proxy using {@code ;token=}). Other calls are closed as
 * UNAUTHENTICATED before they reach a session.
 */
public final class TokenInterceptor implements ServerInterceptor {
  static final Metadata.Key<String> TOKEN =
    Metadata.Key.of("x-qbeast-token", Metadata.ASCII_STRING_MARSHALLER);
  static final Metadata.Key<String> AUTHORIZATION =
    Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final String BEARER = "Bearer ";

  public TokenInterceptor() {
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String given = headers.get(TOKEN);
    if (given == null) {
      String authorization = headers.get(AUTHORIZATION);
      if (authorization != null && authorization.startsWith(BEARER)) {
        given = authorization.substring(BEARER.length());
      }
    }
    if (!SharedSecret.matches(given)) {
      String why = given == null
        ? "this qbeast serve requires its token: add ;x-qbeast-token=TOKEN to the sc:// URL"
        : "the token given to qbeast serve is not its token";
      call.close(Status.UNAUTHENTICATED.withDescription(why), new Metadata());
      return new ServerCall.Listener<Q>() {
      };
    }
    return next.startCall(call, headers);
  }
}
