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

  static final Check BOUNDED =
      new Check(
          "agent-threads-bounded",
          "after every case, fault matrix included, the agent runs only its expected threads:"
              + " retry-agent-dead-letters and at most "
              + maxAsyncWorkers()
              + " retry-agent-async-N",
          List.of());

  private ThreadChecks() {}

  static List<Check> all() {
    return List.of(AGENT_THREADS, NONE_BEFORE_USE, BOUNDED);
  }

  /**
   * The scheduler's workers a run may leave (idle ones end after 30 s): the shared scheduler has at
   * most two, however many retries wait or calls run at a time (issue 13), and it also runs the
   * exporters' start and the reload watcher's looks.
   */
  static int maxAsyncWorkers() {
    return 2;
  }

  /** What breaks {@link #BOUNDED} among the threads alive at the end of the run with the agent. */
  private static List<String> unexpected(DiffRun.Outcome with) {
    List<String> d = new ArrayList<>();
    int workers = 0;
    Set<String> singles = new HashSet<>();
    for (String t : with.threads("end")) {
      String name = t.split("\\|")[0];
      if (!name.startsWith("retry-agent-")) {
        continue;
      }
      if (name.matches("retry-agent-async-\\d+")) {
        workers++;
      } else if (!name.equals("retry-agent-dead-letters")) {
        d.add("`" + name + "` still runs");
      } else if (!singles.add(name)) {
        d.add("two threads `" + name + "`");
      }
    }
    if (workers > maxAsyncWorkers()) {
      d.add(workers + " retry-agent-async-N threads, expected at most " + maxAsyncWorkers());
    }
    return d;
  }

  /**
   * The differences of {@code check} between the runs. A thread of the agent's is one named {@code
   * retry-agent-*}, or one whose kind's first word no thread without the agent has (the
   * application's own {@code app-*} threads aside): an agent thread with another name would show up
   * so.
   */
  static List<String> differences(Check check, DiffRun.Outcome without, DiffRun.Outcome with) {
    if (check == BOUNDED) {
      return unexpected(with);
    }
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
