package dev.retryagent.it.differential;

/**
 * Something an {@link Action} needs from a client API. A {@link Driver} declares, per API, which of
 * these it offers; a case runs on every API that offers all its action needs, and on no other.
 */
public enum Feature {
  /** A timeout on the whole exchange, set per request ({@code HttpRequest.timeout}). */
  REQUEST_TIMEOUT,
  /** A timeout on making the connection. */
  CONNECT_TIMEOUT,
  /** A timeout on each read of the response. */
  READ_TIMEOUT,
  /** A timeout on each write of the request. */
  WRITE_TIMEOUT,
  /** A timeout on the whole call, set per client (OkHttp {@code callTimeout}). */
  CALL_TIMEOUT,
  /** The application cancels the call before starting it (OkHttp {@code cancel()} first). */
  CANCEL_BEFORE,
  /** The application cancels the call itself ({@code Call.cancel()}, {@code Future.cancel}). */
  CANCEL,
  /** The application cancels a stage that depends on the call's future. */
  CANCEL_DEPENDENT,
  /** The application cancels every call of the client ({@code dispatcher().cancelAll()}). */
  CANCEL_ALL,
  /** The application closes the client gracefully during the call ({@code close()}). */
  CLOSE,
  /** The application interrupts the thread that waits for the call. */
  INTERRUPT,
  /** The call is a WebSocket opening handshake. */
  WEBSOCKET,
  /** An application interceptor adds a header to every request. */
  APP_INTERCEPTOR,
  /** The application's callback throws after it has the result. */
  CALLBACK_THROWS,
  /**
   * The request's body waits for {@code 100 Continue} ({@code Expect: 100-continue}; {@code
   * HttpURLConnection} honours it only in a streaming mode, so the driver streams the body with a
   * fixed length).
   */
  EXPECT_CONTINUE,
  /** The method {@code PATCH} ({@code HttpURLConnection} refuses it). */
  PATCH,
  /**
   * The fault matrix ({@link FaultCases}) runs here: every API of a hooked client, not a library on
   * top of one (Retrofit's calls are OkHttp's {@code execute} and {@code enqueue}, which run it).
   */
  FAULT_MATRIX
}
