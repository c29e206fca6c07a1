package dev.retryagent.urlconnection;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.Authenticator;
import java.net.HttpURLConnection;
import java.net.ProtocolException;
import java.net.URL;
import java.security.Permission;
import java.security.Principal;
import java.security.cert.Certificate;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.HostnameVerifier;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocketFactory;

/**
 * What the application holds for an {@code https:} URL while retries are on: an {@link
 * HttpsURLConnection} whose every method forwards to {@link ConnectionView} (the logic of both
 * facades, written once), and whose TLS methods ask the connection in use. Every attempt gets the
 * socket factory and hostname verifier of the attempt before it. A cast to {@code
 * sun.net.www.protocol.https.HttpsURLConnectionImpl} fails (docs/url-connection.md).
 */
final class RetryingHttpsConnection extends HttpsURLConnection {
  private final ConnectionView v;

  RetryingHttpsConnection(UrlExchange exchange) {
    super(exchange.request.url());
    this.v = new ConnectionView(exchange);
  }

  // ---- TLS: the connection in use (the template before any attempt, which answers as the JDK's)

  /**
   * The connection in use; after a call that ended with no connection to hand over ({@link
   * NoResponse}: the breaker open, a wait interrupted), the one that had the request's settings,
   * the last attempt's (or the template when no attempt was made). A socket factory or verifier set
   * on an attempt after it connected, as the JDK allows, is then still what the getters answer, as
   * the application's own connection answers: the template answered, with what it had before.
   */
  private HttpsURLConnection tls() {
    HttpURLConnection c = v.c();
    if (c instanceof NoResponse) {
      c = ((NoResponse) c).settings();
    }
    return (HttpsURLConnection) (c instanceof HttpsURLConnection ? c : v.template());
  }

  @Override
  public String getCipherSuite() {
    return tls().getCipherSuite();
  }

  @Override
  public Certificate[] getLocalCertificates() {
    return tls().getLocalCertificates();
  }

  @Override
  public Certificate[] getServerCertificates() throws SSLPeerUnverifiedException {
    return tls().getServerCertificates();
  }

  @Override
  public Principal getPeerPrincipal() throws SSLPeerUnverifiedException {
    return tls().getPeerPrincipal();
  }

  @Override
  public Principal getLocalPrincipal() {
    return tls().getLocalPrincipal();
  }

  @Override
  public void setHostnameVerifier(HostnameVerifier verifier) {
    if (!v.underSettings()) {
      tls().setHostnameVerifier(verifier);
      return;
    }
    synchronized (v.settings()) { // copied into a fresh attempt: ConnectionView#settings
      tls().setHostnameVerifier(verifier);
    }
  }

  @Override
  public HostnameVerifier getHostnameVerifier() {
    return tls().getHostnameVerifier();
  }

  @Override
  public void setSSLSocketFactory(SSLSocketFactory factory) {
    if (!v.underSettings()) {
      tls().setSSLSocketFactory(factory);
      return;
    }
    synchronized (v.settings()) { // copied into a fresh attempt: ConnectionView#settings
      tls().setSSLSocketFactory(factory);
    }
  }

  @Override
  public SSLSocketFactory getSSLSocketFactory() {
    return tls().getSSLSocketFactory();
  }

  /**
   * Java 12+ ({@code HttpsURLConnection.getSSLSession()}): overrides it there. This library
   * compiles for Java 11, so the connection in use is asked through a method handle.
   */
  @SuppressWarnings("unchecked")
  public Optional<SSLSession> getSSLSession() {
    MethodHandle getter = SslSession.GETTER;
    if (getter == null) {
      throw new UnsupportedOperationException("getSSLSession needs Java 12 or later");
    }
    try {
      return (Optional<SSLSession>) getter.invoke(tls());
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** Looked up on first use only: most applications never ask. */
  private static final class SslSession {
    static final MethodHandle GETTER = find();

    private static MethodHandle find() {
      try {
        return MethodHandles.publicLookup()
            .findVirtual(
                HttpsURLConnection.class, "getSSLSession", MethodType.methodType(Optional.class));
      } catch (NoSuchMethodException | IllegalAccessException java11) {
        return null;
      }
    }
  }

  /** Its view, for tests. */
  ConnectionView view() {
    return v;
  }

  @Override
  public void connect() throws IOException {
    v.connect();
  }

  @Override
  public void disconnect() {
    v.disconnect();
  }

  @Override
  public boolean usingProxy() {
    return v.usingProxy();
  }

  @Override
  public Permission getPermission() throws IOException {
    return v.getPermission();
  }

  @Override
  public String toString() {
    return v.toString();
  }

  @Override
  public URL getURL() {
    return v.getURL();
  }

  @Override
  public void setConnectTimeout(int timeout) {
    v.setConnectTimeout(timeout);
  }

  @Override
  public int getConnectTimeout() {
    return v.getConnectTimeout();
  }

  @Override
  public void setReadTimeout(int timeout) {
    v.setReadTimeout(timeout);
  }

  @Override
  public int getReadTimeout() {
    return v.getReadTimeout();
  }

  @Override
  public void setDoInput(boolean doinput) {
    // refused during another thread's call once connected, as the JDK's
    v.setDoInput(doinput);
  }

  @Override
  public boolean getDoInput() {
    return v.c().getDoInput();
  }

  @Override
  public void setDoOutput(boolean dooutput) {
    // refused during another thread's call once connected, as the JDK's
    v.setDoOutput(dooutput);
  }

  @Override
  public boolean getDoOutput() {
    return v.c().getDoOutput();
  }

  @Override
  public void setAllowUserInteraction(boolean allowuserinteraction) {
    // refused during another thread's call once connected, as the JDK's
    v.setAllowUserInteraction(allowuserinteraction);
  }

  @Override
  public boolean getAllowUserInteraction() {
    return v.c().getAllowUserInteraction();
  }

  @Override
  public void setUseCaches(boolean usecaches) {
    // refused during another thread's call once connected, as the JDK's
    v.setUseCaches(usecaches);
  }

  @Override
  public boolean getUseCaches() {
    return v.c().getUseCaches();
  }

  @Override
  public void setIfModifiedSince(long ifmodifiedsince) {
    // refused during another thread's call once connected, as the JDK's
    v.setIfModifiedSince(ifmodifiedsince);
  }

  @Override
  public long getIfModifiedSince() {
    return v.c().getIfModifiedSince();
  }

  @Override
  public boolean getDefaultUseCaches() {
    return v.c().getDefaultUseCaches();
  }

  @Override
  public void setDefaultUseCaches(boolean defaultusecaches) {
    v.c().setDefaultUseCaches(defaultusecaches);
  }

  @Override
  public void setRequestProperty(String key, String value) {
    v.setRequestProperty(key, value);
  }

  @Override
  public void addRequestProperty(String key, String value) {
    v.addRequestProperty(key, value);
  }

  @Override
  public String getRequestProperty(String key) {
    return v.getRequestProperty(key);
  }

  @Override
  public Map<String, List<String>> getRequestProperties() {
    return v.getRequestProperties();
  }

  @Override
  public void setAuthenticator(Authenticator auth) {
    v.setAuthenticator(auth);
  }

  @Override
  public void setFixedLengthStreamingMode(int contentLength) {
    v.setFixedLengthStreamingMode(contentLength);
  }

  @Override
  public void setFixedLengthStreamingMode(long contentLength) {
    v.setFixedLengthStreamingMode(contentLength);
  }

  @Override
  public void setChunkedStreamingMode(int chunklen) {
    v.setChunkedStreamingMode(chunklen);
  }

  @Override
  public void setInstanceFollowRedirects(boolean followRedirects) {
    v.setInstanceFollowRedirects(followRedirects);
  }

  @Override
  public boolean getInstanceFollowRedirects() {
    return v.c().getInstanceFollowRedirects();
  }

  @Override
  public void setRequestMethod(String method) throws ProtocolException {
    v.setRequestMethod(method);
  }

  @Override
  public String getRequestMethod() {
    return v.c().getRequestMethod();
  }

  @Override
  public OutputStream getOutputStream() throws IOException {
    return v.getOutputStream();
  }

  @Override
  public InputStream getInputStream() throws IOException {
    return v.getInputStream();
  }

  @Override
  public int getResponseCode() throws IOException {
    return v.getResponseCode();
  }

  @Override
  public String getResponseMessage() throws IOException {
    return v.getResponseMessage();
  }

  @Override
  public InputStream getErrorStream() {
    return v.getErrorStream();
  }

  @Override
  public Object getContent() throws IOException {
    return v.getContent();
  }

  @Override
  @SuppressWarnings("rawtypes")
  public Object getContent(Class[] classes) throws IOException {
    return v.getContent(classes);
  }

  @Override
  public String getHeaderField(String name) {
    return v.getHeaderField(name);
  }

  @Override
  public String getHeaderField(int n) {
    return v.getHeaderField(n);
  }

  @Override
  public String getHeaderFieldKey(int n) {
    return v.getHeaderFieldKey(n);
  }

  @Override
  public Map<String, List<String>> getHeaderFields() {
    return v.getHeaderFields();
  }

  @Override
  public int getHeaderFieldInt(String name, int defaultValue) {
    return v.getHeaderFieldInt(name, defaultValue);
  }

  @Override
  public long getHeaderFieldLong(String name, long defaultValue) {
    return v.getHeaderFieldLong(name, defaultValue);
  }

  @Override
  public long getHeaderFieldDate(String name, long defaultValue) {
    return v.getHeaderFieldDate(name, defaultValue);
  }

  @Override
  public int getContentLength() {
    return v.getContentLength();
  }

  @Override
  public long getContentLengthLong() {
    return v.getContentLengthLong();
  }

  @Override
  public String getContentType() {
    return v.getContentType();
  }

  @Override
  public String getContentEncoding() {
    return v.getContentEncoding();
  }

  @Override
  public long getExpiration() {
    return v.getExpiration();
  }

  @Override
  public long getDate() {
    return v.getDate();
  }

  @Override
  public long getLastModified() {
    return v.getLastModified();
  }
}
