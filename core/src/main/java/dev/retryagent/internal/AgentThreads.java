package dev.retryagent.internal;

import dev.retryagent.internal.observe.Sanitizer;
import dev.retryagent.internal.observe.Sinks;
import java.security.AccessController;
import java.security.PrivilegedAction;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Every thread the engine and its observers start: a daemon (it never keeps the JVM alive), named
 * {@code retry-agent-*} (a thread dump says whose it is), with the system class loader as its
 * context class loader and no inheritable thread-locals. A new thread otherwise inherits both from
 * whichever thread made it, often an application's request thread: in a web container that
 * application's loader would stay reachable from our thread after it was undeployed. A throwable
 * that ends one of them is said in one sanitised line ({@link Uncaught}). Threads are started by
 * their owners when first needed, never here.
 */
public final class AgentThreads {
  /** The prefix of every thread name. */
  public static final String PREFIX = "retry-agent-";

  private AgentThreads() {}

  /**
   * A new, unstarted thread running {@code task}.
   *
   * @param name starts with {@value #PREFIX}
   */
  public static Thread newThread(Runnable task, String name) {
    return newThread(null, task, name);
  }

  /**
   * As {@link #newThread(Runnable, String)}, in {@code group} (null: the JVM's top thread group,
   * never the group of the thread that asks, see {@link Create}).
   */
  public static Thread newThread(ThreadGroup group, Runnable task, String name) {
    if (!name.startsWith(PREFIX)) {
      throw new IllegalArgumentException("an agent thread's name starts with " + PREFIX);
    }
    // Privileged: under a SecurityManager (JDK 17 and 21) the thread would otherwise inherit the
    // access control context of whoever made it (premain's launcher, a JDK HttpClient thread with
    // no permissions), and making it a daemon with the system class loader is checked against
    // every frame of the calling thread; our own classes hold every permission (AgentClassLoader).
    return AccessController.doPrivileged(new Create(group, task, name));
  }

  /** A named class, not a lambda: loaded before {@code main} (see {@link Numbered}). */
  private static final class Create implements PrivilegedAction<Thread> {
    private final ThreadGroup group;
    private final Runnable task;
    private final String name;

    Create(ThreadGroup group, Runnable task, String name) {
      this.group = group;
      this.task = task;
      this.name = name;
    }

    @Override
    public Thread run() {
      // Nothing inherited: a new thread otherwise copies the inheritable thread-locals of the
      // thread that made it, often an application's request thread (a web framework's request
      // or logging context, its keys and values the web application's classes), and keeps them
      // as long as it lives, which holds an undeployed web application in memory.
      Thread t = new Thread(group != null ? group : topGroup(), task, name, 0, false);
      adopt(t);
      return t;
    }

    /**
     * The JDK's own top group ({@code system}), not the group of the thread that asks: that is
     * often an application's (a web container's, {@code exec:java}'s isolated group), whose owner
     * counts, interrupts and waits for the threads in it when the application ends, as
     * exec-maven-plugin does for 15 s a thread before it says they would not end; an idle thread of
     * our pool survives an interrupt. The JDK's own long-lived threads (reference handler,
     * finalizer, cleaners) are there too.
     */
    private static ThreadGroup topGroup() {
      ThreadGroup g = Thread.currentThread().getThreadGroup();
      for (ThreadGroup p = g.getParent(); p != null; p = p.getParent()) {
        g = p;
      }
      return g;
    }
  }

  /** Threads named {@code prefix1}, {@code prefix2}, ... */
  public static ThreadFactory factory(String prefix) {
    return new Numbered(prefix);
  }

  /**
   * A named class, not a lambda: this class is loaded before {@code main} (the agent's start-up
   * thread), where an {@code invokedynamic} would spin classes.
   */
  private static final class Numbered implements ThreadFactory {
    private final String prefix;
    private final AtomicInteger n = new AtomicInteger();

    Numbered(String prefix) {
      this.prefix = prefix;
    }

    @Override
    public Thread newThread(Runnable r) {
      return AgentThreads.newThread(r, prefix + n.incrementAndGet());
    }
  }

  /**
   * Makes a thread someone else created for us a daemon with the system class loader and {@link
   * Uncaught} as its uncaught-exception handler.
   */
  static void adopt(Thread t) {
    if (!t.isAlive()) {
      t.setDaemon(true);
    }
    t.setContextClassLoader(ClassLoader.getSystemClassLoader());
    t.setUncaughtExceptionHandler(Uncaught.STDERR);
  }

  /**
   * What a throwable that ends one of our threads becomes: one line on stderr, sanitised (a bug's
   * message may quote a URL with its query or user-info, or a header), with the frame it came from.
   * Without it, the thread's group hands it to the application's default handler, which is not the
   * application's business and may log it in full, or prints the whole trace, message included. A
   * named class, not a lambda: set on threads made before {@code main}.
   */
  static final class Uncaught implements Thread.UncaughtExceptionHandler {
    static final Uncaught STDERR = new Uncaught(Sinks.stderr());

    private final Consumer<String> sink;

    Uncaught(Consumer<String> sink) {
      this.sink = sink;
    }

    @Override
    public void uncaughtException(Thread t, Throwable e) {
      try {
        StackTraceElement[] frames = e.getStackTrace();
        sink.accept(
            "retry-agent: internal error, thread "
                + Sanitizer.oneLine(t.getName())
                + " ended: "
                + Sanitizer.exception(e, true, null)
                + (frames.length == 0 ? "" : " at " + frames[0]));
      } catch (Throwable ignored) {
        // Nothing more to do for a thread that is ending (out of memory, a closed stderr).
      }
    }
  }

  /**
   * Renames the threads of {@code group} whose names do not start with {@value #PREFIX} to {@code
   * prefix} + their name in lower case, and gives them the system class loader and {@link
   * Uncaught}: for threads a JDK facility starts for us in the group of the thread that asked (the
   * JDK's HTTP server's dispatcher and timers).
   */
  public static void claim(ThreadGroup group, String prefix) {
    AccessController.doPrivileged(new Claim(group, prefix));
  }

  /** {@link #claim}, privileged as {@link Create} is. */
  private static final class Claim implements PrivilegedAction<Void> {
    private final ThreadGroup group;
    private final String prefix;

    Claim(ThreadGroup group, String prefix) {
      this.group = group;
      this.prefix = prefix;
    }

    @Override
    public Void run() {
      claimNow(group, prefix);
      return null;
    }
  }

  private static void claimNow(ThreadGroup group, String prefix) {
    Thread[] threads = new Thread[group.activeCount() + 8];
    int n = group.enumerate(threads, false);
    for (int i = 0; i < n; i++) {
      Thread t = threads[i];
      if (!t.getName().startsWith(PREFIX)) {
        t.setName(prefix + t.getName().toLowerCase(java.util.Locale.ROOT));
      }
      t.setContextClassLoader(ClassLoader.getSystemClassLoader());
      t.setUncaughtExceptionHandler(Uncaught.STDERR);
    }
  }
}
