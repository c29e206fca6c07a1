package dev.retryagent.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Our threads: daemons, named, with the system class loader, and what ends one is said safely. */
class AgentThreadsTest {
  @Test
  void aThreadIsANamedDaemonWithTheSystemLoaderAndOurHandler() throws Exception {
    Thread t = AgentThreads.newThread(() -> {}, "retry-agent-test");

    assertThat(t.getName()).isEqualTo("retry-agent-test");
    assertThat(t.isDaemon()).isTrue();
    assertThat(t.getContextClassLoader()).isSameAs(ClassLoader.getSystemClassLoader());
    // not the thread group, which hands it to the application's default handler
    assertThat(t.getUncaughtExceptionHandler()).isSameAs(AgentThreads.Uncaught.STDERR);
  }

  @Test
  void aThreadInheritsNoThreadLocalOfTheApplicationThreadThatMadeIt() throws Exception {
    // given an application thread with an inheritable thread-local (a web framework's request
    // context), on which our first thread is made
    InheritableThreadLocal<Object> requestContext = new InheritableThreadLocal<>();
    requestContext.set(new Object());
    AtomicReference<Object> seen = new AtomicReference<>("not run");
    Thread t;
    try {
      t = AgentThreads.newThread(() -> seen.set(requestContext.get()), "retry-agent-test");
    } finally {
      requestContext.remove(); // the request ends, as a well-behaved application does
    }

    // when our thread runs
    t.start();
    t.join(10_000);

    // then it holds no copy, which would keep the application's classes as long as it lives
    assertThat(t.isAlive()).isFalse();
    assertThat(seen.get()).isNull();
  }

  @Test
  void aThreadMadeOnAnApplicationThreadIsNotInTheApplicationsThreadGroup() throws Exception {
    // given an application whose threads run in a group of its own, which it counts, interrupts
    // and waits for when the application ends (exec-maven-plugin's exec:java does)
    ThreadGroup application = new ThreadGroup("application");
    AtomicReference<Thread> made = new AtomicReference<>();
    Thread appThread =
        new Thread(
            application,
            () -> made.set(AgentThreads.newThread(() -> {}, "retry-agent-test")),
            "app");

    // when our thread is made on one of its threads (our first timed task, a first dead letter)
    appThread.start();
    appThread.join(10_000);

    // then it is in the JVM's top group, not in the application's
    ThreadGroup top = Thread.currentThread().getThreadGroup();
    while (top.getParent() != null) {
      top = top.getParent();
    }
    assertThat(made.get().getThreadGroup()).isSameAs(top);
    made.get().start();
    made.get().join(10_000);
    assertThat(application.activeCount()).isZero();
  }

  @Test
  void aThrowableThatEndsOurThreadIsOneSanitisedLineAndNeverTheApplications() throws Exception {
    List<Throwable> application = new CopyOnWriteArrayList<>();
    Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    Thread.setDefaultUncaughtExceptionHandler((th, e) -> application.add(e));
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      Thread t =
          AgentThreads.newThread(
              () -> {
                throw new IllegalStateException(
                    "bug near https://user:hunter2@pay.example/charge?token=s3cret");
              },
              "retry-agent-test");
      t.start();
      t.join(10_000);
    } finally {
      System.setErr(err);
      Thread.setDefaultUncaughtExceptionHandler(before);
    }

    String out = captured.toString(StandardCharsets.UTF_8);
    assertThat(application).isEmpty();
    assertThat(out.lines())
        .singleElement()
        .asString()
        .startsWith("retry-agent: internal error, thread retry-agent-test ended: ")
        .contains("IllegalStateException", "pay.example", "AgentThreadsTest")
        .doesNotContain("hunter2", "s3cret");
  }
}
