package dev.retryagent.guarantees;

import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;

/** For the raw loopback hosts of these tests, which answer (or do not) by hand. */
final class RawRequests {
  private RawRequests() {}

  /** Reads one request: its head, then a body of its Content-Length. */
  static void read(InputStream in) throws IOException {
    StringBuilder line = new StringBuilder();
    int length = 0;
    while (true) {
      int b = in.read();
      if (b < 0) {
        throw new IOException("closed mid-request");
      }
      if (b != '\n') {
        if (b != '\r') {
          line.append((char) b);
        }
        continue;
      }
      if (line.length() == 0) {
        break;
      }
      String l = line.toString().toLowerCase(Locale.ROOT);
      if (l.startsWith("content-length:")) {
        length = Integer.parseInt(l.substring("content-length:".length()).trim());
      }
      line.setLength(0);
    }
    in.readNBytes(length);
  }
}
