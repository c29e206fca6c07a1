package dev.retryagent.it.differential;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What must hold of the threads the agent starts, from the thread lists {@link DiffApp} prints
 * before its first call and at the end: every thread that runs with the agent and not without it is
 * a daemon named {@code retry-agent-*} whose context class loader is the system loader (the
 * application's calls run on threads with an application loader, which a thread started from them
 * would inherit), and none runs before the first call (the suite's configuration needs none then:
 * no reload, no exporter thread).
 */
final class ThreadChecks {
  /** A JVM-level check, with its known differences as a {@link Case} has them. */
  record Check(String id, String title, List<Known> known) {
    List<Known> knownFor(String combination) {
      return known.stream().filter(k -> k.covers(combination)).toList();
    }
  }

  static final Check AGENT_THREADS =
      new Check(
          "agent-threads",
          "every thread the agent started is a daemon named retry-agent-* with the system loader",
          List.of());

  static final Check NONE_BEFORE_USE =
      new Check(
          "agent-threads-before-use",
          "the agent starts no thread before the first call",
          List.of());

  private ThreadChecks() {}

  static List<Check> all() {
    return List.of(AGENT_THREADS, NONE_BEFORE_USE);
  }

  /**
   * The differences of {@code check} between the runs. A thread of the agent's is one named {@code
   * retry-agent-*}, or one whose kind's first word no thread without the agent has (the
   * application's own {@code app-*} threads aside): an agent thread with another name would show up
   * so.
   */
  static List<String> differences(Check check, DiffRun.Outcome without, DiffRun.Outcome with) {
    String when = check == AGENT_THREADS ? "end" : "start";
    Set<String> plain = new HashSet<>();
    for (String t : without.threads(when)) {
      plain.add(firstWord(t.split("\\|")[0]));
    }
    List<String> d = new ArrayList<>();
    for (String t : with.threads(when)) {
      String[] f = t.split("\\|");
      boolean agents = f[0].startsWith("retry-agent-");
      if (!agents && (plain.contains(firstWord(f[0])) || f[0].startsWith("app-"))) {
        continue;
      }
      if (check == NONE_BEFORE_USE) {
        d.add("`" + f[0] + "` runs before the first call");
      } else if (!agents || !f[1].equals("true") || !f[2].equals("system")) {
        d.add("`" + f[0] + "`: daemon " + f[1] + ", context loader " + f[2]);
      }
    }
    return d;
  }

  private static String firstWord(String threadName) {
    return ThreadKinds.kind(threadName).split(" ")[0];
  }
}
