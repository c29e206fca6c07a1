package dev.retryagent.apache5;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.core5.http.HttpHost;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * The config of an attempt ({@link AttemptTimeouts#bounded}) and the one the context gets back
 * ({@link AttemptTimeouts#unshortened}) keep every setting of the application's config but the
 * three timeouts: each getter of {@code RequestConfig}, found by reflection, so that a setting a
 * later HttpClient adds is covered too (5.6's {@code getH2Priority}, which decides the {@code
 * Priority} header of an HTTP/2 request, and {@code getUnixDomainSocket}). Run on HttpClient 5.1
 * (the default execution) and 5.6 ({@code apache56}).
 */
class AttemptConfigTest {
  private static final List<String> TIMEOUTS =
      List.of("getConnectionRequestTimeout", "getConnectTimeout", "getResponseTimeout");

  @Test
  void anAttemptsConfigKeepsEverySettingButTheTimeouts() throws Exception {
    RequestConfig own = everySettingChanged().build();

    RequestConfig bounded = AttemptTimeouts.bounded(own, null, null, TimeUnit.SECONDS.toNanos(1));

    assertThat(bounded).isNotNull();
    // Softly: the failure names every setting lost, not the first one only.
    SoftAssertions softly = new SoftAssertions();
    for (Method getter : getters()) {
      if (TIMEOUTS.contains(getter.getName())) {
        softly
            .assertThat(getter.invoke(bounded))
            .as(getter.getName())
            .isEqualTo(Timeout.ofSeconds(1));
      } else {
        softly
            .assertThat(getter.invoke(bounded))
            .as(getter.getName())
            .isEqualTo(getter.invoke(own));
      }
    }
    softly.assertAll();
  }

  @Test
  void theConfigGivenBackKeepsEverySettingOfTheOneSetDuringTheAttempt() throws Exception {
    RequestConfig own = everySettingChanged().build();
    RequestConfig bounded = AttemptTimeouts.bounded(own, null, null, TimeUnit.SECONDS.toNanos(1));
    // An interceptor's config of its own, with the attempt's timeouts (as a copy of it has).
    RequestConfig now =
        everySettingChanged()
            .setConnectionRequestTimeout(bounded.getConnectionRequestTimeout())
            .setConnectTimeout(bounded.getConnectTimeout())
            .setResponseTimeout(bounded.getResponseTimeout())
            .build();

    RequestConfig back = AttemptTimeouts.unshortened(now, bounded, own);

    assertThat(back).isNotSameAs(now).isNotSameAs(own);
    SoftAssertions softly = new SoftAssertions();
    for (Method getter : getters()) {
      // now's settings, with own's timeouts
      softly.assertThat(getter.invoke(back)).as(getter.getName()).isEqualTo(getter.invoke(own));
    }
    softly.assertAll();
  }

  @Test
  void theTestsConfigChangesEverySetting() throws Exception {
    // A setting left at its default would go unnoticed if it were lost.
    RequestConfig own = everySettingChanged().build();
    SoftAssertions softly = new SoftAssertions();
    for (Method getter : getters()) {
      softly
          .assertThat(getter.invoke(own))
          .as(getter.getName() + " (give the test a value for its setter)")
          .isNotEqualTo(getter.invoke(RequestConfig.DEFAULT));
    }
    softly.assertAll();
  }

  /** RequestConfig's own getters of this HttpClient: each setting it has. */
  private static List<Method> getters() {
    List<Method> getters = new ArrayList<>();
    for (Method m : RequestConfig.class.getDeclaredMethods()) {
      String name = m.getName();
      if (Modifier.isPublic(m.getModifiers())
          && !Modifier.isStatic(m.getModifiers())
          && m.getParameterCount() == 0
          && (name.startsWith("get") || name.startsWith("is"))) {
        getters.add(m);
      }
    }
    assertThat(getters).hasSizeGreaterThanOrEqualTo(15); // 5.1 has 15
    String version = System.getProperty("expected.httpclient5", "");
    if (version.startsWith("5.6")) {
      assertThat(getters).extracting(Method::getName).contains("getH2Priority");
    }
    return getters;
  }

  /**
   * A builder with each one-argument setter of this HttpClient's {@code RequestConfig.Builder}
   * called with a value other than the default (each timeout longer than the attempt's bound).
   */
  private static RequestConfig.Builder everySettingChanged() throws Exception {
    RequestConfig.Builder b = RequestConfig.custom();
    for (Method setter : RequestConfig.Builder.class.getMethods()) {
      if (!setter.getName().startsWith("set") || setter.getParameterCount() != 1) {
        continue;
      }
      setter.invoke(b, valueFor(setter));
    }
    return b;
  }

  private static Object valueFor(Method setter) throws Exception {
    Class<?> type = setter.getParameterTypes()[0];
    if (type == boolean.class) {
      String setting = setter.getName().substring(3);
      return !Objects.equals(Boolean.TRUE, read(RequestConfig.DEFAULT, "is" + setting));
    }
    if (type == int.class) {
      return 7;
    }
    if (type == String.class) {
      return "test-cookies";
    }
    if (type == HttpHost.class) {
      return new HttpHost("proxy.test", 3128);
    }
    if (type == Collection.class) {
      return List.of("Digest");
    }
    if (type == Timeout.class) {
      return Timeout.ofSeconds(41);
    }
    if (type == TimeValue.class) {
      return TimeValue.ofSeconds(43);
    }
    if (type == Path.class) {
      return Path.of("/run/test.sock");
    }
    if (type.getName().equals("org.apache.hc.core5.http2.priority.PriorityValue")) {
      // 5.6 (HttpCore 5.4), absent from the 5.1 the test compiles against
      return type.getMethod("of", int.class, boolean.class).invoke(null, 1, true);
    }
    return fail("RequestConfig.Builder.%s takes a %s: give the test a value", setter, type);
  }

  private static Object read(RequestConfig c, String getter) throws Exception {
    return RequestConfig.class.getMethod(getter).invoke(c);
  }
}
