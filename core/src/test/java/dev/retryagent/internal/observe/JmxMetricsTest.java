package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitBreakerOpenException;
import dev.retryagent.engine.PolicyResolver;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeRequest;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class JmxMetricsTest {
  private static final AtomicInteger DOMAINS = new AtomicInteger();

  private final MBeanServer server = ManagementFactory.getPlatformMBeanServer();
  private final String domain = "dev.retryagent.test" + DOMAINS.incrementAndGet();
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private final List<JmxMetrics> toClose = new CopyOnWriteArrayList<>();

  @AfterEach
  void unregister() {
    toClose.forEach(JmxMetrics::unregister);
  }

  private JmxMetrics jmx(RetryMetrics m, Rig rig) {
    JmxMetrics j = new JmxMetrics(m, rig == null ? null : rig.engine, errors::add, domain);
    toClose.add(j);
    return j;
  }

  @Test
  void namesFollowTheAgentsDomainAndQuoteWhatMustBeQuoted() {
    assertThat(JmxMetrics.routeName(JmxMetrics.DEFAULT_DOMAIN, "llm"))
        .hasToString("dev.retryagent:type=Route,name=llm");
    assertThat(JmxMetrics.hostName(JmxMetrics.DEFAULT_DOMAIN, "https://api.example.com:443"))
        .hasToString("dev.retryagent:type=Host,name=\"https://api.example.com:443\"");
    assertThat(JmxMetrics.engineName(JmxMetrics.DEFAULT_DOMAIN))
        .hasToString("dev.retryagent:type=Engine");
    ObjectName hostile = JmxMetrics.routeName("d", "a,b=c:\"*?\\\nz");
    assertThat(hostile.isPattern()).isFalse();
    assertThat(ObjectName.unquote(hostile.getKeyProperty("name"))).isEqualTo("a,b=c:\"*?\\\nz");
  }

  @Test
  void aBreakerAReloadReplacedIsNotCountedOpenAnyMore() throws Exception {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.breakerPolicy("search", CircuitBreakerPolicy.Scope.HOST), m);
    for (int i = 0; i < 4; i++) {
      rig.call(FakeRequest.get("search.example.com", "/q"), 503);
    }
    assertThat(jmx(m, rig).register()).isTrue();
    ObjectName engine = JmxMetrics.engineName(domain);
    assertThat(server.getAttribute(engine, "OpenBreakers")).isEqualTo(1);

    // A reload changes the breaker section: the host gets a fresh breaker, closed; the old one is
    // never asked again, and stays open only in the registry until it is dropped.
    rig.engine.reconfigure(
        Mode.ENFORCE,
        PolicyResolver.always(
            Rig.policy(
                "search",
                b -> b.maxAttempts(1),
                CircuitBreakerPolicy.builder().countWindow(4).minimumCalls(4).build(),
                BudgetPolicy.defaults(),
                RateLimitPolicy.defaults())));
    rig.call(FakeRequest.get("search.example.com", "/q"), 200);

    // The engine dropped the replaced breaker at the reload: only the host's new one counts.
    assertThat(server.getAttribute(engine, "OpenBreakers")).isEqualTo(0);
    assertThat(PrometheusText.render(m, rig.engine).lines())
        .contains("retryagent_breakers{state=\"open\"} 0");
    assertThat(
            server.getAttribute(
                JmxMetrics.hostName(domain, "https://search.example.com:443"), "BreakerState"))
        .isEqualTo("closed");
  }

  /**
   * POSTs to the host go through route {@code posts}, whose {@code circuitBreaker} section is its
   * own; GETs through {@code reads}, with another: the engine keeps a breaker of each for the host.
   */
  private static PolicyResolver postsAndReads() {
    Policy posts = Rig.breakerPolicy("posts", CircuitBreakerPolicy.Scope.HOST);
    Policy reads =
        Rig.policy(
            "reads",
            b -> b.maxAttempts(1),
            CircuitBreakerPolicy.builder().countWindow(10).minimumCalls(10).build(),
            BudgetPolicy.defaults(),
            RateLimitPolicy.defaults());
    return new PolicyResolver() {
      @Override
      public Policy resolve(String method, String host, int port, String path) {
        return method.equals("POST") ? posts : reads;
      }

      @Override
      public Collection<Policy> policies() {
        return List.of(posts, reads);
      }
    };
  }

  @Test
  void aHostsOpenBreakerShowsWhileAnotherRoutesBreakerOfItIsClosedAndUsedLater() throws Exception {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(postsAndReads(), m);
    for (int i = 0; i < 4; i++) {
      rig.call(FakeRequest.post("api.example.com", "/p"), 503);
    }
    assertThat(rig.call(FakeRequest.post("api.example.com", "/p")))
        .as("posts' breaker is open: the call is refused")
        .isInstanceOf(CircuitBreakerOpenException.class);
    // A GET afterwards, through the other section's breaker of the same host, closed: the most
    // recently used of the host's two breakers.
    assertThat(rig.call(FakeRequest.get("api.example.com", "/g"), 200)).isNotNull();
    assertThat(jmx(m, rig).register()).isTrue();
    ObjectName host = JmxMetrics.hostName(domain, "https://api.example.com:443");
    ObjectName engine = JmxMetrics.engineName(domain);

    // Shown once per host (docs/operations.md), the host shows the worst; both are counted.
    assertThat(PrometheusText.render(m, rig.engine).lines())
        .contains(
            "retryagent_breaker_state{host=\"https://api.example.com:443\",state=\"open\"} 1",
            "retryagent_breaker_state{host=\"https://api.example.com:443\",state=\"closed\"} 0",
            "retryagent_breakers{state=\"open\"} 1",
            "retryagent_breakers{state=\"closed\"} 1");
    assertThat(server.getAttribute(host, "BreakerState")).isEqualTo("open");
    assertThat(server.getAttribute(engine, "OpenBreakers")).isEqualTo(1);

    // The open one's time is up and a trial POST is let in: half-open, worse than closed.
    rig.time.sleep(Duration.ofSeconds(30).toNanos());
    RetryCall trial = rig.engine.newCall(FakeRequest.post("api.example.com", "/p"));
    trial.reservePermit();
    trial.acquireBreaker();
    rig.call(FakeRequest.get("api.example.com", "/g"), 200);

    assertThat(PrometheusText.render(m, rig.engine).lines())
        .contains(
            "retryagent_breaker_state{host=\"https://api.example.com:443\",state=\"half-open\"}"
                + " 1",
            "retryagent_breaker_state{host=\"https://api.example.com:443\",state=\"closed\"} 0",
            "retryagent_breakers{state=\"half-open\"} 1",
            "retryagent_breakers{state=\"closed\"} 1");
    assertThat(server.getAttribute(host, "BreakerState")).isEqualTo("half-open");
    assertThat(server.getAttribute(engine, "HalfOpenBreakers")).isEqualTo(1);
  }

  /**
   * r22 #4: a library user's resolver that does not list its policies. The engine cannot drop the
   * breakers of a section no route has any more at a reload (it does not know which), and an open
   * one is never asked again: it stayed open, and the host showed open for the JVM's life while
   * every call went through the other breaker. While it would still refuse a call it is shown (the
   * engine cannot tell no call reaches it); once it would let one through, only the breakers the
   * calls of the configuration in force use decide the host's state.
   */
  @Test
  void anOpenBreakerOfARouteAResolverThatListsNoPoliciesNoLongerHasStopsDecidingOnceItsTimeIsUp()
      throws Exception {
    RetryMetrics m = new RetryMetrics();
    Policy posts = Rig.breakerPolicy("posts", CircuitBreakerPolicy.Scope.HOST);
    Policy reads =
        Rig.policy(
            "reads",
            b -> b.maxAttempts(1),
            CircuitBreakerPolicy.builder().countWindow(10).minimumCalls(10).build(),
            BudgetPolicy.defaults(),
            RateLimitPolicy.defaults());
    Rig rig = new Rig((method, host, port, path) -> method.equals("POST") ? posts : reads, m);
    for (int i = 0; i < 4; i++) {
      rig.call(FakeRequest.post("api.example.com", "/p"), 503);
    }
    assertThat(rig.call(FakeRequest.post("api.example.com", "/p")))
        .isInstanceOf(CircuitBreakerOpenException.class);
    // Every call by reads from now on: posts' breaker is reached by no call.
    rig.engine.reconfigure(Mode.ENFORCE, (method, host, port, path) -> reads);
    rig.call(FakeRequest.post("api.example.com", "/p"), 200);
    assertThat(jmx(m, rig).register()).isTrue();
    ObjectName host = JmxMetrics.hostName(domain, "https://api.example.com:443");
    ObjectName engine = JmxMetrics.engineName(domain);
    assertThat(server.getAttribute(host, "BreakerState"))
        .as("it would refuse a call now: shown")
        .isEqualTo("open");

    rig.time.sleep(Duration.ofSeconds(31).toNanos());
    rig.call(FakeRequest.get("api.example.com", "/g"), 200);

    assertThat(server.getAttribute(host, "BreakerState")).isEqualTo("closed");
    assertThat(server.getAttribute(engine, "OpenBreakers")).isEqualTo(0);
    assertThat(PrometheusText.render(m, rig.engine).lines())
        .contains(
            "retryagent_breaker_state{host=\"https://api.example.com:443\",state=\"open\"} 0",
            "retryagent_breaker_state{host=\"https://api.example.com:443\",state=\"closed\"} 1",
            "retryagent_breakers{state=\"open\"} 0",
            "retryagent_breakers{state=\"closed\"} 1");

    // Back to posts (still unlisted): the breaker is reached again and shows what it is.
    rig.engine.reconfigure(
        Mode.ENFORCE, (method, host1, port, path) -> method.equals("POST") ? posts : reads);
    RetryCall trial = rig.engine.newCall(FakeRequest.post("api.example.com", "/p"));
    trial.reservePermit();
    trial.acquireBreaker();
    assertThat(server.getAttribute(host, "BreakerState")).isEqualTo("half-open");
  }

  /** Counts the reads of the engine's breakers: walks of them all, and reads of one key's. */
  private static final class CountingBreakerStates extends BreakerStates {
    final AtomicInteger walks = new AtomicInteger();
    final AtomicInteger keyReads = new AtomicInteger();

    CountingBreakerStates(RetryEngine engine) {
      super(engine);
    }

    @Override
    List<CircuitBreaker> all() {
      walks.incrementAndGet();
      return super.all();
    }

    @Override
    List<CircuitBreaker> of(String key) {
      keyReads.incrementAndGet();
      return super.of(key);
    }
  }

  /**
   * A console reads the attributes of every MBean one by one: each read computes its attribute
   * alone. Before, each computed every attribute of its MBean, a copy and sort of every breaker
   * under the registry's lock among them: about 35 such walks per host MBean polled.
   */
  @Test
  void eachAttributeReadComputesItsAttributeAloneAndNoReadButTheBreakerCountsWalksEveryBreaker()
      throws Exception {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.breakerPolicy("r", CircuitBreakerPolicy.Scope.HOST), m);
    for (String h : List.of("a.example", "b.example", "c.example")) {
      rig.call(FakeRequest.get(h, "/"), 200);
    }
    CountingBreakerStates states = new CountingBreakerStates(rig.engine);
    JmxMetrics j = new JmxMetrics(m, rig.engine, errors::add, domain, states);
    toClose.add(j);
    assertThat(j.register()).isTrue();
    ObjectName engine = JmxMetrics.engineName(domain);

    int reads = 0;
    int breakerStates = 0;
    for (ObjectName n : server.queryNames(new ObjectName(domain + ":*"), null)) {
      for (MBeanAttributeInfo a : server.getMBeanInfo(n).getAttributes()) {
        if (a.getName().endsWith("Breakers")) {
          continue; // the engine's counts of every breaker, below
        }
        assertThat(server.getAttribute(n, a.getName())).isNotNull();
        reads++;
        breakerStates += a.getName().equals("BreakerState") ? 1 : 0;
      }
    }
    assertThat(reads).isGreaterThan(100);
    assertThat(breakerStates).isEqualTo(3);
    assertThat(states.walks).as("walks of every breaker").hasValue(0);
    assertThat(states.keyReads).as("reads of one host's breakers").hasValue(3);

    assertThat(server.getAttribute(engine, "OpenBreakers")).isEqualTo(0);
    assertThat(states.walks).hasValue(1);
    String[] all =
        Arrays.stream(server.getMBeanInfo(engine).getAttributes())
            .map(MBeanAttributeInfo::getName)
            .toArray(String[]::new);
    assertThat(server.getAttributes(engine, all)).hasSize(all.length);
    assertThat(states.walks).as("one walk for both counts of one read").hasValue(2);
  }

  @Test
  void routeHostAndEngineCountersAreReadableOnThePlatformServer() throws Exception {
    RetryMetrics m = new RetryMetrics();
    Rig llm = new Rig(Rig.policy("llm"), m);
    llm.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 200);
    Rig pay =
        new Rig(Rig.policy("payments", b -> b.unsafeMethods(UnsafeMethods.IF_IDEMPOTENCY_KEY)), m);
    pay.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);

    assertThat(jmx(m, llm).register()).isTrue();

    ObjectName route = JmxMetrics.routeName(domain, "llm");
    assertThat(server.getAttribute(route, "Calls")).isEqualTo(1L);
    assertThat(server.getAttribute(route, "Retries")).isEqualTo(1L);
    assertThat(server.getAttribute(route, "Attempts")).isEqualTo(2L);
    ObjectName payments = JmxMetrics.routeName(domain, "payments");
    assertThat(server.getAttribute(payments, "GaveUpNotIdempotent")).isEqualTo(1L);
    assertThat(server.getAttribute(payments, "Failed")).isEqualTo(1L);
    ObjectName host = JmxMetrics.hostName(domain, "https://api.example.com:443");
    assertThat(server.getAttribute(host, "Succeeded")).isEqualTo(1L);
    assertThat(server.getAttribute(host, "BreakerState")).isEqualTo("closed");
    ObjectName engine = JmxMetrics.engineName(domain);
    assertThat(server.getAttribute(engine, "PendingAsyncRetries")).isEqualTo(0);
    assertThat(server.getAttribute(engine, "TrackedHosts")).isEqualTo(2);
    assertThat(server.getAttribute(engine, "Mode")).isEqualTo("enforce");
    assertThat(server.getAttribute(engine, "Calls")).isEqualTo(2L);
    assertThat(server.getMBeanInfo(route).getAttributes())
        .extracting(MBeanAttributeInfo::getName)
        .contains("Calls", "Retries", "WouldRetry", "GaveUpDeadline", "BreakerOpens");
    assertThat(errors).isEmpty();
  }

  @Test
  void aRouteOrHostSeenAfterRegistrationGetsItsMBean() throws Exception {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.policy("late"), m);
    jmx(m, rig).register();

    rig.call(FakeRequest.get("late.example", "/"), 200);

    assertThat(server.getAttribute(JmxMetrics.routeName(domain, "late"), "Calls")).isEqualTo(1L);
    assertThat(
            server.getAttribute(JmxMetrics.hostName(domain, "https://late.example:443"), "Calls"))
        .isEqualTo(1L);
  }

  @Test
  void hostsPastTheBoundShareTheOtherMBean() throws Exception {
    RetryMetrics m = new RetryMetrics(1);
    Rig rig = new Rig(Rig.policy("r"), m);
    jmx(m, rig).register();

    rig.call(FakeRequest.get("a.example", "/"), 200);
    rig.call(FakeRequest.get("b.example", "/"), 200);
    rig.call(FakeRequest.get("c.example", "/"), 200);

    assertThat(server.queryNames(new ObjectName(domain + ":type=Host,*"), null))
        .containsExactlyInAnyOrder(
            JmxMetrics.hostName(domain, "https://a.example:443"),
            JmxMetrics.hostName(domain, RetryMetrics.OTHER_HOST));
    assertThat(server.getAttribute(JmxMetrics.hostName(domain, "other"), "Calls")).isEqualTo(2L);
  }

  @Test
  void aHostileRouteNameIsRegisteredUnderAQuotedName() throws Exception {
    RetryMetrics m = new RetryMetrics();
    String name = "a,b=c:\"*?\\\nz";
    Rig rig = new Rig(Rig.policy(name), m);
    rig.call(FakeRequest.get("h.example", "/"), 200);

    jmx(m, rig).register();

    assertThat(server.getAttribute(JmxMetrics.routeName(domain, name), "Calls")).isEqualTo(1L);
    assertThat(errors).isEmpty();
  }

  @Test
  void unregisterRemovesEveryMBean() throws Exception {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.policy("r"), m);
    rig.call(FakeRequest.get("h.example", "/"), 200);
    JmxMetrics j = jmx(m, rig);
    j.register();
    assertThat(server.queryNames(new ObjectName(domain + ":*"), null)).hasSize(3);

    j.unregister();
    rig.call(FakeRequest.get("new.example", "/"), 200);

    assertThat(server.queryNames(new ObjectName(domain + ":*"), null)).isEmpty();
    assertThat(j.registered()).isEmpty();
  }

  @Test
  void aTakenNameIsReportedOnceAndNeverThrown() {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.policy("r"), m);
    rig.call(FakeRequest.get("h.example", "/"), 200);
    assertThat(jmx(m, rig).register()).isTrue();
    JmxMetrics second = jmx(m, rig);

    assertThat(second.register()).isFalse();
    rig.call(FakeRequest.get("h2.example", "/"), 200);

    assertThat(errors).hasSize(1);
    assertThat(errors.get(0))
        .startsWith("retry-agent: cannot register the JMX MBean for " + domain + ":type=Engine")
        .contains("InstanceAlreadyExistsException");
  }
}
