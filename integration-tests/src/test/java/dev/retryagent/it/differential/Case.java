package dev.retryagent.it.differential;

import dev.retryagent.it.harness.CountingServer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * One case of the differential suite, client-neutral: how its server behaves, the agent's policy
 * for it (the sections of a route that claims its server), what the application does, and what may
 * differ with the agent. It runs on every client API that offers what its action needs, each time
 * against a server of its own.
 *
 * <p>A case may carry {@link Known known differences}: where today's code is known to break the
 * rule, one marker per bug.
 *
 * @param id short and stable; names the route and the test
 * @param title what happens, in words
 * @param script scripts the case's server; null for a server that never accepts a connection
 * @param policy YAML of the route's sections ({@code retry: {...}}), empty for the defaults
 * @param action what the application does
 * @param expect what may differ with the agent
 * @param known the combinations known to differ today
 * @param agentLogNever fragments the agent's log lines about this case's server must not contain
 * @param checks what must hold with the agent beyond the comparison (the fault matrix's)
 */
public record Case(
    String id,
    String title,
    Consumer<CountingServer> script,
    String policy,
    Action action,
    Expect expect,
    List<Known> known,
    List<String> agentLogNever,
    Checks checks) {

  /** A case whose server answers 200 to a GET of {@code /}, with the default policy. */
  public static Case of(String id, String title) {
    return new Case(
        id, title, s -> {}, "", Action.get("/"), Expect.same(), List.of(), List.of(), Checks.NONE);
  }

  public Case server(Consumer<CountingServer> value) {
    return new Case(id, title, value, policy, action, expect, known, agentLogNever, checks);
  }

  /** The server accepts no connection (a full accept queue): connects time out. */
  public Case unreachable() {
    return server(null);
  }

  /** The script of {@link #refused()}. */
  static final Consumer<CountingServer> REFUSED = s -> {};

  /** No server: every connection is refused ({@link dev.retryagent.it.harness.RefusedPort}). */
  public Case refused() {
    return server(REFUSED);
  }

  public Case policy(String yaml) {
    return new Case(id, title, script, yaml, action, expect, known, agentLogNever, checks);
  }

  public Case action(Action value) {
    return new Case(id, title, script, policy, value, expect, known, agentLogNever, checks);
  }

  public Case expect(Expect value) {
    return new Case(id, title, script, policy, action, value, known, agentLogNever, checks);
  }

  /** Known to differ in every way on the combinations of {@code scope}, for {@code reason}. */
  public Case known(String scope, String reason) {
    return known(new Known(scope, "", reason, false));
  }

  /**
   * Known to make the differences that {@code pattern} finds on the combinations of {@code scope},
   * for {@code reason}.
   */
  public Case known(String scope, String pattern, String reason) {
    return known(new Known(scope, pattern, reason, false));
  }

  /** As {@link #known(String, String, String)}, for a difference that shows only in some runs. */
  public Case knownIntermittent(String scope, String pattern, String reason) {
    return known(new Known(scope, pattern, reason, true));
  }

  private Case known(Known marker) {
    List<Known> k = new ArrayList<>(known);
    k.add(marker);
    return new Case(
        id, title, script, policy, action, expect, List.copyOf(k), agentLogNever, checks);
  }

  /** With the agent, none of its log lines about this case's server may contain these. */
  public Case agentLogNever(String... fragments) {
    return new Case(id, title, script, policy, action, expect, known, List.of(fragments), checks);
  }

  /** Adds explicit expectations with the agent ({@link Checks}). */
  public Case checks(java.util.function.UnaryOperator<Checks> more) {
    return new Case(
        id, title, script, policy, action, expect, known, agentLogNever, more.apply(checks));
  }

  /** The markers that cover {@code combination}. */
  List<Known> knownFor(String combination) {
    List<Known> k = new ArrayList<>();
    for (Known marker : known) {
      if (marker.covers(combination)) {
        k.add(marker);
      }
    }
    return k;
  }
}
