package dev.retryagent.okhttp;

import java.io.IOException;
import okhttp3.MediaType;
import okhttp3.RequestBody;
import okio.BufferedSink;

/**
 * Wraps a one-shot (or duplex) body to learn whether it was written: until then the engine can
 * still send it (a connect failure happens before the body), after that never again. To OkHttp it
 * is the body itself: its own answers to {@code isOneShot()} and {@code isDuplex()}.
 */
final class TrackingRequestBody extends RequestBody {
  private final RequestBody delegate;
  private final OkRequestView owner;

  TrackingRequestBody(RequestBody delegate, OkRequestView owner) {
    this.delegate = delegate;
    this.owner = owner;
  }

  @Override
  public MediaType contentType() {
    return delegate.contentType();
  }

  @Override
  public long contentLength() throws IOException {
    return delegate.contentLength();
  }

  @Override
  public void writeTo(BufferedSink sink) throws IOException {
    owner.markBodyWritten();
    delegate.writeTo(sink);
  }

  /**
   * The body's own answer: OkHttp asks only to send it again itself (its repeat of a 408 or of a
   * 503 with Retry-After: 0, a redirect, a resend after a connection failure), and does so as
   * without us. A duplex body is not one-shot unless it says so, and "one-shot" for it made OkHttp
   * give back what it repeats without the agent. One whose isOneShot() throws fails there as it
   * does without us.
   */
  @Override
  public boolean isOneShot() {
    return delegate.isOneShot();
  }

  @Override
  public boolean isDuplex() {
    return delegate.isDuplex();
  }
}
