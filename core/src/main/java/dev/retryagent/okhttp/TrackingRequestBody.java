package dev.retryagent.okhttp;

import java.io.IOException;
import okhttp3.MediaType;
import okhttp3.RequestBody;
import okio.BufferedSink;

/**
 * Wraps a one-shot (or duplex) body to learn whether it was written: until then it can still be
 * sent (a connect failure happens before the body), after that never again.
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

  @Override
  public boolean isOneShot() {
    // Asked as OkHttp would ask the application's body (to resend or follow up): one whose
    // isOneShot() throws fails there as it does without us.
    delegate.isOneShot();
    return true;
  }

  @Override
  public boolean isDuplex() {
    return delegate.isDuplex();
  }
}
