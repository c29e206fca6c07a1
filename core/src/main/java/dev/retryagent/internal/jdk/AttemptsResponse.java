package dev.retryagent.internal.jdk;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpResponse;
import java.util.Optional;
import javax.net.ssl.SSLSession;

/**
 * A response the application gets in place of the JDK's response to an attempt, showing that
 * response's status, headers, TLS session, URI, version, connection label and string as they are;
 * what differs is the subclass's: {@link CallersResponse} (its request), {@link GivenBack} (its
 * body, given back after a late wait).
 */
abstract class AttemptsResponse<T> implements HttpResponse<T> {
  /** Java 25's {@code HttpResponse.connectionLabel()}, or null before it. */
  private static final MethodHandle CONNECTION_LABEL = connectionLabelHandle();

  final HttpResponse<T> attempts; // the JDK's, or its view as the application gets it

  AttemptsResponse(HttpResponse<T> attempts) {
    this.attempts = attempts;
  }

  @Override
  public int statusCode() {
    return attempts.statusCode();
  }

  @Override
  public HttpHeaders headers() {
    return attempts.headers();
  }

  @Override
  public Optional<SSLSession> sslSession() {
    return attempts.sslSession();
  }

  @Override
  public URI uri() {
    return attempts.uri();
  }

  @Override
  public HttpClient.Version version() {
    return attempts.version();
  }

  /**
   * Java 25+: the JDK's {@code connectionLabel()}. Compiled for Java 11, so without
   * {@code @Override}; on 25 it overrides the interface's default (which says empty).
   */
  @SuppressWarnings("unchecked")
  public Optional<String> connectionLabel() {
    if (CONNECTION_LABEL == null) {
      return Optional.empty();
    }
    try {
      return (Optional<String>) CONNECTION_LABEL.invoke(attempts);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  private static MethodHandle connectionLabelHandle() {
    try {
      return MethodHandles.publicLookup()
          .findVirtual(
              HttpResponse.class, "connectionLabel", MethodType.methodType(Optional.class));
    } catch (NoSuchMethodException | IllegalAccessException e) {
      return null; // before Java 25
    }
  }

  @Override
  public String toString() {
    return attempts.toString(); // the method, URI and status: the same as the JDK's
  }
}
