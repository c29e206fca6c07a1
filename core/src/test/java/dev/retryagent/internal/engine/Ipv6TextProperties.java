package dev.retryagent.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Every spelling of an IPv6 address has the one spelling RFC 5952 writes, the address the JDK's
 * {@code InetAddress} reads from it (a literal: no name is looked up), and the allocation-free
 * check agrees with it on every text.
 */
class Ipv6TextProperties {
  private static final Pattern ZERO_RUNS = Pattern.compile("(?:^|:)0(?::0)+(?::|$)");

  /** RFC 5952 from the JDK's full form: the longest run of two or more zero groups, the first. */
  private static String oracle(byte[] address) throws Exception {
    InetAddress a = InetAddress.getByAddress(address);
    if (a instanceof Inet4Address) {
      return a.getHostAddress(); // IPv4-mapped, as the JDK takes it
    }
    String full = a.getHostAddress(); // 0:0:0:0:0:0:0:1, no leading zeros, lower case
    Matcher m = ZERO_RUNS.matcher(full);
    int bestStart = -1;
    int bestEnd = -1;
    int bestGroups = 0;
    while (m.find()) {
      int groups = m.group().replace(":", "").length(); // each zero group is one "0"
      if (groups > bestGroups) {
        bestStart = m.start();
        bestEnd = m.end();
        bestGroups = groups;
      }
    }
    return bestStart < 0 ? full : full.substring(0, bestStart) + "::" + full.substring(bestEnd);
  }

  private static String canonical(String s) {
    return Ipv6Text.canonical(s, 0, s.length());
  }

  private static boolean isCanonical(String s) {
    return Ipv6Text.isCanonical(s, 0, s.length());
  }

  @Property(tries = 3000)
  void everySpellingHasTheOneRfc5952Writes(@ForAll("spellings") Spelling s) throws Exception {
    String expected = oracle(s.address());
    assertThat(canonical(s.text)).as(s.text).isEqualTo(expected);
    assertThat(isCanonical(s.text)).as(s.text).isEqualTo(s.text.equals(expected));
    assertThat(InetAddress.getByName(s.text).getAddress())
        .as("the JDK reads the same address")
        .isEqualTo(InetAddress.getByName(expected).getAddress());
  }

  @Property(tries = 3000)
  void theCheckAgreesOnAnyText(@ForAll("texts") String text) throws Exception {
    String c = canonical(text);
    assertThat(isCanonical(text)).as(text).isEqualTo(text.equals(c));
    if (c != null) {
      if (c.indexOf(':') >= 0) { // else an IPv4-mapped address, written as its IPv4 address
        assertThat(canonical(c)).isEqualTo(c);
      }
      assertThat(InetAddress.getByName(text).getAddress())
          .as(text)
          .isEqualTo(InetAddress.getByName(c).getAddress());
    }
  }

  @Example
  void writesTheExamplesOfRfc5952() {
    assertThat(canonical("2001:0db8:0000:0000:0000:0000:0002:0001")).isEqualTo("2001:db8::2:1");
    assertThat(canonical("2001:db8:0:1:1:1:1:1")).isEqualTo("2001:db8:0:1:1:1:1:1");
    assertThat(canonical("2001:db8:0:0:1:0:0:1")).isEqualTo("2001:db8::1:0:0:1");
    assertThat(canonical("2001:DB8::AAAA")).isEqualTo("2001:db8::aaaa");
    assertThat(canonical("0:0:0:0:0:0:0:1")).isEqualTo("::1");
    assertThat(canonical("::ffff:127.0.0.1")).isEqualTo("127.0.0.1");
    assertThat(canonical("fe80::0001%eth0")).isEqualTo("fe80::1%eth0");
    assertThat(canonical("FE80::1%ETH0")).isEqualTo("fe80::1%ETH0");
    // An IPv4 address has no zone: a mapped address with one stays IPv6.
    assertThat(canonical("::ffff:10.0.0.1%eth0")).isEqualTo("::ffff:a00:1%eth0");
    assertThat(isCanonical("::ffff:a00:1%eth0")).isTrue();
    assertThat(isCanonical("::ffff:a00:1")).isFalse();
    assertThat(canonical("1:2")).isNull();
    assertThat(canonical("::1::")).isNull();
    assertThat(canonical("::01.2.3.4")).isNull();
  }

  /** An address, and one way of writing it. */
  static final class Spelling {
    final int[] groups;
    final String text;

    Spelling(int[] groups, String text) {
      this.groups = groups;
      this.text = text;
    }

    byte[] address() {
      byte[] b = new byte[16];
      for (int i = 0; i < 8; i++) {
        b[2 * i] = (byte) (groups[i] >>> 8);
        b[2 * i + 1] = (byte) groups[i];
      }
      return b;
    }

    @Override
    public String toString() {
      return text;
    }
  }

  @Provide
  Arbitrary<Spelling> spellings() {
    Arbitrary<Integer> group =
        Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(5, Arbitraries.just(0)),
            net.jqwik.api.Tuple.of(1, Arbitraries.just(0xffff)),
            net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(1, 0xffff)));
    Arbitrary<List<Integer>> groups = group.list().ofSize(8);
    return Combinators.combine(
            groups,
            Arbitraries.integers().between(0, 7), // where a compressed run may start
            Arbitraries.integers().between(0, 8), // how long it may be
            Arbitraries.of(true, false), // upper case
            Arbitraries.of(true, false), // leading zeros
            Arbitraries.of(true, false)) // the last two groups as an IPv4 address
        .as(Ipv6TextProperties::spell);
  }

  private static Spelling spell(
      List<Integer> list, int runAt, int runLength, boolean upper, boolean padded, boolean v4) {
    int[] g = new int[8];
    for (int i = 0; i < 8; i++) {
      g[i] = list.get(i);
    }
    int end = v4 ? 6 : 8;
    // Compress the zero groups from runAt, as many as are zero and at most runLength, if any.
    int runEnd = runAt;
    while (runEnd < end && runEnd - runAt < runLength && g[runEnd] == 0) {
      runEnd++;
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < end; i++) {
      if (i == runAt && runEnd > runAt) {
        b.append("::");
        i = runEnd - 1;
        continue;
      }
      if (b.length() > 0 && !(b.charAt(b.length() - 1) == ':' && i == runEnd)) {
        b.append(':');
      }
      String h = Integer.toHexString(g[i]);
      b.append(padded ? "0000".substring(h.length()) + h : h);
    }
    if (v4) {
      if (b.length() > 0 && b.charAt(b.length() - 1) != ':') {
        b.append(':');
      }
      b.append(g[6] >>> 8).append('.').append(g[6] & 0xff).append('.');
      b.append(g[7] >>> 8).append('.').append(g[7] & 0xff);
    }
    String text = upper ? b.toString().toUpperCase(Locale.ROOT) : b.toString();
    return new Spelling(g, text);
  }

  @Provide
  Arbitrary<String> texts() {
    Arbitrary<String> noise =
        Arbitraries.strings().withChars("0123456789abcdefABCDEF:.").ofMaxLength(45);
    Arbitrary<String> nearlyCanonical =
        spellings().map(s -> s.text).map(t -> t.toLowerCase(Locale.ROOT));
    return Arbitraries.oneOf(noise, nearlyCanonical, spellings().map(s -> s.text));
  }
}
