package dev.retryagent.it.apps;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;

/**
 * JFR's {@code jdk.VirtualThreadPinned} events (JDK 21+), every one of them (threshold zero), with
 * stack traces: a virtual thread that blocked while it could not leave its carrier.
 *
 * <p>{@link #report()} prints {@code pinned.total=N}; {@code pinned.agent=N}, those with a frame of
 * the agent on the stack ({@code dev.retryagent.} but not the tests' {@code dev.retryagent.it.}, or
 * its bridge {@code java.lang.RetryAgentBridge}); {@code pinned.agentWait=N}, those of them that
 * blocked in a wait (the agent's retry or rate-limit wait, {@code SyncRetryLoop.sleep}, or a sleep,
 * park or {@code Object.wait} under an agent frame): a carrier held while a call waits for its
 * retry; and one {@code pinned.event=} line per event (at most 20): duration, reason and the top
 * frames.
 *
 * <p>A recorder that saw nothing would prove nothing, so {@link #start()} also pins a carrier on
 * purpose, once: a virtual thread initialises {@link Control}, whose static initialiser (a frame a
 * virtual thread cannot leave) waits through the agent's own {@code Sleeper.SYSTEM}, looked up
 * before (see {@link #agentSleeper()}). That event is counted apart, as {@code pinned.control=N}
 * and {@code pinned.controlAsWait=N} (how many of them the rule above classifies as an agent wait):
 * the test requires both to be 1, then {@code pinned.agentWait} to be 0.
 */
final class PinnedEvents {
  static final String EVENT = "jdk.VirtualThreadPinned";
  private static final int SHOWN = 20;
  private static final String[] WAITS = {
    "java.lang.Thread.sleep",
    "java.util.concurrent.locks.LockSupport.park",
    "java.lang.Object.wait",
    "java.lang.VirtualThread.park",
    "java.lang.VirtualThread.sleepNanos"
  };

  /** The agent's wait that {@link Control} makes, set before it is initialised. */
  private static volatile Sleeping controlSleeper;

  private final Recording recording;

  private PinnedEvents(Recording recording) {
    this.recording = recording;
  }

  static PinnedEvents start() throws Exception {
    Recording r = new Recording();
    r.enable(EVENT).withThreshold(Duration.ZERO).withStackTrace();
    r.start();
    controlSleeper = agentSleeper(); // before Control: writing its own field would initialise it
    Thread control = SoakApp.virtualThread(Control::touch);
    control.join();
    return new PinnedEvents(r);
  }

  void report() throws IOException {
    recording.stop();
    Path file = Files.createTempFile("pinned", ".jfr");
    try {
      recording.dump(file);
      List<RecordedEvent> events = RecordingFile.readAllEvents(file);
      int total = 0;
      int agent = 0;
      int agentWait = 0;
      int control = 0;
      int controlAsWait = 0;
      for (RecordedEvent e : events) {
        if (!e.getEventType().getName().equals(EVENT)) {
          continue;
        }
        List<String> frames = frames(e);
        boolean byAgent = frames.stream().anyMatch(PinnedEvents::isAgentFrame);
        boolean waiting =
            frames.stream()
                .anyMatch(
                    f ->
                        f.startsWith("dev.retryagent.engine.SyncRetryLoop.sleep")
                            || (byAgent && isWait(f)));
        if (frames.stream().anyMatch(f -> f.startsWith(Control.class.getName() + "."))) {
          control++;
          controlAsWait += waiting ? 1 : 0;
          continue;
        }
        total++;
        agent += byAgent ? 1 : 0;
        agentWait += waiting ? 1 : 0;
        if (total <= SHOWN) {
          String reason = e.hasField("pinnedReason") ? e.getString("pinnedReason") : "?";
          String top = String.join(" < ", frames);
          top = top.length() > 600 ? top.substring(0, 600) + "..." : top;
          System.out.println(
              "pinned.event=" + e.getDuration().toMillis() + "ms " + reason + " at " + top);
        }
      }
      System.out.println("pinned.total=" + total);
      System.out.println("pinned.agent=" + agent);
      System.out.println("pinned.agentWait=" + agentWait);
      System.out.println("pinned.control=" + control);
      System.out.println("pinned.controlAsWait=" + controlAsWait);
    } finally {
      recording.close();
      Files.deleteIfExists(file);
    }
  }

  private static boolean isAgentFrame(String frame) {
    return (frame.startsWith("dev.retryagent.") && !frame.startsWith("dev.retryagent.it."))
        || frame.startsWith("java.lang.RetryAgentBridge"); // the agent's hooks in java.base
  }

  private static boolean isWait(String frame) {
    for (String w : WAITS) {
      if (frame.startsWith(w)) {
        return true;
      }
    }
    return false;
  }

  /** {@code CLASS.METHOD} of each frame, innermost first. */
  private static List<String> frames(RecordedEvent e) {
    if (e.getStackTrace() == null) {
      return List.of("(no stack)");
    }
    return e.getStackTrace().getFrames().stream()
        .map(RecordedFrame::getMethod)
        .map(m -> m.getType().getName() + "." + m.getName())
        .toList();
  }

  /**
   * The agent's {@code Sleeper.SYSTEM}, looked up by name in the agent's class loader, found
   * through its engine MBean. The soak starts the exporters at once but on the agent's own thread,
   * so the MBean may not be there yet: waited for (at most 30 s), here and not in {@link Control}'s
   * initialiser, where blocking on the MBean server's lock would pin the carrier with no agent wait
   * on the stack, and the control would count an event of the wrong kind.
   */
  private static Sleeping agentSleeper() throws Exception {
    javax.management.MBeanServer server =
        java.lang.management.ManagementFactory.getPlatformMBeanServer();
    javax.management.ObjectName engine =
        new javax.management.ObjectName("dev.retryagent:type=Engine");
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
    while (!server.isRegistered(engine)) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("the agent's engine MBean was not registered in 30 s");
      }
      Thread.sleep(10);
    }
    // The agent's classes live in its own class loader: the one of its MBeans.
    Class<?> type =
        Class.forName("dev.retryagent.engine.Sleeper", true, server.getClassLoaderFor(engine));
    Object sleeper = type.getField("SYSTEM").get(null);
    java.lang.reflect.Method sleep = type.getMethod("sleep", long.class);
    return nanos -> sleep.invoke(sleeper, nanos);
  }

  /** A call of the agent's {@code Sleeper.sleep}, through reflection. */
  interface Sleeping {
    void sleep(long nanos) throws Exception;
  }

  /**
   * Pins its carrier on purpose: its static initialiser waits 20 ms through the agent's {@code
   * Sleeper.SYSTEM} (a frame a virtual thread cannot leave, above the agent's own wait).
   */
  static final class Control {
    static {
      try {
        controlSleeper.sleep(Duration.ofMillis(20).toNanos());
      } catch (Exception e) {
        throw new IllegalStateException("the agent's Sleeper failed", e);
      }
    }

    private Control() {}

    static void touch() {
      // Initialising the class is the point.
    }
  }
}
