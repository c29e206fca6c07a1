package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code agent.metrics.prometheus.host}'s IPv6 literals against what {@link InetAddress}, which the
 * endpoint's bind resolves the value with, reads as one on this JDK (the build runs it on 17 and
 * 25): the key refuses what the bind would, and takes what it would.
 */
class BindHostTest {
  private static final String ALLOWED =
      "; allowed a host name or IP address such as 127.0.0.1 or 0.0.0.0";

  @Test
  void anIpv6LiteralIsTakenExactlyWhenTheJdkReadsIt() {
    List<String> differ = new ArrayList<>();
    int read = 0;
    int refused = 0;
    for (String literal : candidates()) {
      for (String host : new String[] {literal, literal + "%7", "[" + literal + "]"}) {
        if (jdkReads(host)) {
          read++;
        } else {
          refused++;
        }
        if (accepted(host) != jdkReads(host)) {
          differ.add(host + (accepted(host) ? " (taken, the JDK refuses it)" : " (refused)"));
        }
      }
    }
    assertThat(differ).isEmpty();
    // Both sides of the line are tried, each many times.
    assertThat(read).isGreaterThan(200);
    assertThat(refused).isGreaterThan(200);
  }

  @Test
  void aTripleColonIsALocatedProblemAndAZoneNamedByItsInterfaceLoads() throws Exception {
    // 1:::2 passed validate and failed at the bind; fe80::1%eth0, a link-local bind, was refused.
    for (String host : new String[] {"1:::2", ":::", "1:::", "[1:::2]", "fe80::1%", "::1%a%b"}) {
      ConfigProblem p = Yaml.problem("agent: {metrics: {prometheus: {host: '" + host + "'}}}");
      assertThat(p.path()).as(host).isEqualTo("agent.metrics.prometheus.host");
      assertThat(p.message()).as(host).isEqualTo("found " + host + ALLOWED);
    }
    for (String host :
        new String[] {"fe80::1%eth0", "[fe80::1%eth0]", "fe80::1%br-0a1b", "::1%lo"}) {
      AgentConfig c = Yaml.load("agent: {metrics: {prometheus: {host: '" + host + "'}}}");
      assertThat(c.metrics().prometheusHost()).isEqualTo(host);
      // The JDK reads the literal; only whether the interface exists here is the bind's to say.
      try {
        InetAddress.getByName(host);
      } catch (UnknownHostException e) {
        assertThat(e.getMessage()).as(host).doesNotContain("invalid");
      }
    }
  }

  private static boolean accepted(String host) {
    try {
      AgentKeys.BIND_HOST.convert(host);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** Every candidate starts with a hex digit or ':', so the JDK reads it as a literal: no DNS. */
  private static boolean jdkReads(String host) {
    try {
      InetAddress.getByName(host);
      return true;
    } catch (UnknownHostException e) {
      return false;
    }
  }

  /**
   * Up to 9 groups with "::" at each place or none, ending with a group or an IPv4 address; and
   * those with a ":::", a lone ':' at either end, a 5-digit group.
   */
  private static List<String> candidates() {
    List<String> all = new ArrayList<>();
    String[] groups = {"1", "ab", "ffff", "0", "7", "c0", "12", "dead", "9"};
    for (int n = 0; n <= 9; n++) {
      for (int gap = -1; gap <= n; gap++) {
        for (boolean v4 : new boolean[] {false, true}) {
          StringBuilder b = new StringBuilder();
          for (int i = 0; i < n; i++) {
            if (i == gap) {
              b.append("::");
            } else if (i > 0) {
              b.append(':');
            }
            b.append(groups[i]);
          }
          if (gap == n) {
            b.append("::");
          }
          if (v4) {
            if (b.length() > 0 && b.charAt(b.length() - 1) != ':') {
              b.append(':');
            }
            b.append("10.0.0.1");
          }
          String s = b.toString();
          if (s.indexOf(':') < 0) {
            continue; // an IPv4 address, or digits the JDK reads as one (1 is 0.0.0.1): no IPv6
          }
          all.add(s);
          all.add(s.replace("::", ":::"));
          all.add(":" + s);
          all.add(s + ":");
          all.add(s.replaceFirst("^1(?=:|$)", "12345"));
        }
      }
    }
    return all;
  }
}
