package dev.retryagent.it.http2;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.core.ConditionTimeoutException;
import org.eclipse.jetty.http.MetaData;
import org.eclipse.jetty.http2.ErrorCode;
import org.eclipse.jetty.http2.HTTP2Session;
import org.eclipse.jetty.http2.api.Stream;
import org.eclipse.jetty.http2.api.server.ServerSessionListener;
import org.eclipse.jetty.http2.frames.GoAwayFrame;
import org.eclipse.jetty.http2.frames.HeadersFrame;
import org.eclipse.jetty.http2.frames.ResetFrame;
import org.eclipse.jetty.http2.server.HTTP2CServerConnectionFactory;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * Jetty 12's HTTP/2 server in clear text on loopback (prior knowledge, and the HTTP/1.1 upgrade to
 * h2c), refusing the first stream for one path unprocessed once the whole request arrived, before
 * the application's handler sees it: by {@code RST_STREAM REFUSED_STREAM}, or by a {@code GOAWAY}
 * whose last stream id is below the stream's (or not at all, {@link Refusal#NONE}). Jetty's own
 * session code speaks the protocol; only the refusal is ours, taken in its session listener where
 * Jetty would hand the stream to the handler. Every later stream is served by the handler, which
 * counts the requests it saw for the path and answers them {@code status} (any other path: 200, the
 * java.net.http client's upgrading GET).
 */
final class RefusingJettyH2c implements AutoCloseable {
  /** How the chosen stream is refused. */
  enum Refusal {
    RST_STREAM,
    GOAWAY,
    /**
     * A GOAWAY, and the server stops listening: a client's resend of the stream finds no
     * connection.
     */
    GOAWAY_THEN_NO_CONNECTION,
    /** None: every stream reaches the handler (for {@link #firstAnswers}). */
    NONE
  }

  private final Server jetty = new Server();
  private final ServerConnector connector;
  private final String path;
  private final Refusal refusal;
  private final int status;
  private final AtomicInteger refusalsLeft = new AtomicInteger(1);
  private final AtomicInteger refused = new AtomicInteger();
  private final AtomicInteger handled = new AtomicInteger();
  private final java.util.Queue<Integer> firstAnswers =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  RefusingJettyH2c(String path, Refusal refusal, int status) throws Exception {
    this.path = path;
    this.refusal = refusal;
    this.status = status;
    HttpConfiguration config = new HttpConfiguration();
    connector =
        new ServerConnector(
            jetty, new HttpConnectionFactory(config), new Refusing(config, this::refusing));
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    jetty.addConnector(connector);
    jetty.setHandler(
        new Handler.Abstract() {
          @Override
          public boolean handle(Request request, Response response, Callback callback)
              throws Exception {
            boolean ours = request.getHttpURI().getPath().equals(path);
            if (ours) {
              handled.incrementAndGet();
            }
            Content.Source.consumeAll(request);
            Integer first = ours ? firstAnswers.poll() : null;
            response.setStatus(first != null ? first : ours ? status : 200);
            callback.succeeded();
            return true;
          }
        });
    jetty.start();
  }

  /** The first requests for the path that reach the handler get these statuses, in order. */
  RefusingJettyH2c firstAnswers(Integer... statuses) {
    firstAnswers.addAll(java.util.List.of(statuses));
    return this;
  }

  /** The server's URL of {@code p}. */
  String url(String p) {
    return "http://127.0.0.1:" + connector.getLocalPort() + p;
  }

  /** The requests for the path that reached the handler. */
  int handled() {
    return handled.get();
  }

  /** The streams for the path refused (1 once the client sent it). */
  int refused() {
    return refused.get();
  }

  /**
   * Whether to refuse this new stream: if so, the listener that refuses it once the whole request
   * arrived (its end of stream), else null (the handler serves it). Refused on its last frame, the
   * client has written all of the request by then, whatever its speed: OkHttp 4 sends a stream
   * refused while it still wrote the body no more (a race, on the client's side, seen by hand), and
   * the side-by-side runs must see the same.
   */
  private Stream.Listener refusing(Stream stream, HeadersFrame frame) {
    MetaData meta = frame.getMetaData();
    if (refusal == Refusal.NONE
        || !(meta instanceof MetaData.Request)
        || !path.equals(((MetaData.Request) meta).getHttpURI().getPath())
        || refusalsLeft.getAndDecrement() <= 0) {
      return null;
    }
    if (frame.isEndStream()) {
      refuse(stream);
      return Stream.Listener.AUTO_DISCARD;
    }
    Stream.Listener listener =
        new Stream.Listener() {
          @Override
          public void onDataAvailable(Stream s) {
            while (true) {
              Stream.Data data = s.readData();
              if (data == null) {
                s.demand();
                return;
              }
              data.release();
              if (data.frame().isEndStream()) {
                refuse(s);
                return;
              }
            }
          }
        };
    stream.demand();
    return listener;
  }

  private void refuse(Stream stream) {
    refused.incrementAndGet();
    if (refusal == Refusal.RST_STREAM) {
      stream.reset(
          new ResetFrame(stream.getId(), ErrorCode.REFUSED_STREAM_ERROR.code), Callback.NOOP);
    } else {
      if (refusal == Refusal.GOAWAY_THEN_NO_CONNECTION) {
        // Before the GOAWAY: the connection stays, new ones are refused. The listening socket is
        // registered with Jetty's selector, so NIO closes it only at the selector's next turn:
        // until
        // then a client's new connection may still be accepted (seen once in CI: OkHttp 4.12's own
        // resend of the POST answered 200 in one run, refused in the other). The GOAWAY goes out
        // only once a connection is refused.
        int port = connector.getLocalPort();
        connector.close();
        try {
          await()
              .atMost(Duration.ofSeconds(10))
              .pollInterval(Duration.ofMillis(2))
              .until(() -> refusesConnections(port));
        } catch (ConditionTimeoutException stillListening) {
          // the GOAWAY all the same: the comparison then says what the clients did
        }
      }
      // The streams above the last stream id were not processed (RFC 9113, 6.8): the client may
      // send them again on a new connection.
      ((HTTP2Session) stream.getSession())
          .goAway(
              new GoAwayFrame(stream.getId() - 2, ErrorCode.NO_ERROR.code, null), Callback.NOOP);
    }
  }

  private static boolean refusesConnections(int port) {
    try (Socket probe = new Socket()) {
      probe.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      return false;
    } catch (ConnectException refused) {
      return true;
    } catch (IOException other) {
      return false;
    }
  }

  /** The listener that refuses a new stream, or null to have the handler serve it. */
  private interface Refuser {
    Stream.Listener refusing(Stream stream, HeadersFrame frame);
  }

  private static final class Refusing extends HTTP2CServerConnectionFactory {
    private final Refuser refuser;

    Refusing(HttpConfiguration config, Refuser refuser) {
      super(config);
      this.refuser = refuser;
    }

    @Override
    protected ServerSessionListener newSessionListener(Connector connector, EndPoint endPoint) {
      return new HTTPServerSessionListener(endPoint) {
        @Override
        public Stream.Listener onNewStream(Stream stream, HeadersFrame frame) {
          Stream.Listener refusing = refuser.refusing(stream, frame);
          return refusing != null ? refusing : super.onNewStream(stream, frame);
        }
      };
    }
  }

  @Override
  public void close() throws Exception {
    jetty.stop();
  }
}
