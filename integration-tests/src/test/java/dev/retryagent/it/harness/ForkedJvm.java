package dev.retryagent.it.harness;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Runs a {@code main} class in a new JVM, by default with {@code -javaagent:retry-agent.jar}, and
 * returns its exit code and output. Every run is bounded by a timeout, after which the process tree
 * is killed; a JVM shutdown hook kills anything still running when the test JVM exits.
 *
 * <pre>{@code
 * ForkedJvm.Result r = ForkedJvm.run(Jdks.jdk25(), "mode=observe", JdkHttpApp.class, "send", url);
 * assertThat(r.exitCode()).isZero();
 * assertThat(r.value("status")).isEqualTo("200");
 * }</pre>
 *
 * The forked class path is this module's test classes (the apps) plus any {@link Builder#classpath}
 * entries; JUnit and the test code are there too but the apps never touch them.
 *
 * <p>{@link Builder#start()} runs a JVM that stays up ({@link Running}): the test writes lines to
 * its stdin and waits, with awaitility, for what it prints. It is bounded like a run (killed at the
 * timeout) and killed by {@link Running#close()}. {@link #cli} runs {@code java -jar
 * retry-agent.jar ARGS}, the agent's command line.
 */
public final class ForkedJvm {
  /** Default bound on one forked JVM. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

  private static final Set<Process> RUNNING = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(() -> RUNNING.forEach(ForkedJvm::kill), "forked-jvm-reaper"));
  }

  /** Kills started JVMs at their timeout. */
  private static final ScheduledExecutorService WATCHDOG =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "forked-jvm-watchdog");
            t.setDaemon(true);
            return t;
          });

  private ForkedJvm() {}

  /** Runs {@code java -jar retry-agent.jar args} on {@code javaHome}: the agent's command line. */
  public static Result cli(Path javaHome, String... args) {
    return builder(javaHome).withoutAgent().jar(agentJar()).args(args).run();
  }

  /** Runs {@code mainClass args} on {@code javaHome} with the agent and {@code agentArgs}. */
  public static Result run(Path javaHome, String agentArgs, Class<?> mainClass, String... args) {
    return builder(javaHome).agentArgs(agentArgs).mainClass(mainClass).args(args).run();
  }

  public static Builder builder(Path javaHome) {
    return new Builder(javaHome);
  }

  /** The agent jar under test, from system property {@code retryagent.jar} (set by the build). */
  public static Path agentJar() {
    String jar = System.getProperty("retryagent.jar");
    if (jar == null) {
      throw new IllegalStateException("system property retryagent.jar is not set");
    }
    Path path = Path.of(jar).toAbsolutePath().normalize();
    if (!Files.isRegularFile(path)) {
      throw new IllegalStateException(path + " does not exist: build the agent module first");
    }
    return path;
  }

  /** The agent version the start-up line names, from system property {@code retryagent.version}. */
  public static String agentVersion() {
    String version = System.getProperty("retryagent.version");
    if (version == null) {
      throw new IllegalStateException("system property retryagent.version is not set");
    }
    return version;
  }

  /** Where a class was loaded from (a directory or a jar), for class paths. */
  public static Path locationOf(Class<?> c) {
    try {
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void kill(Process p) {
    p.descendants().forEach(ProcessHandle::destroyForcibly);
    p.destroyForcibly();
  }

  /** Settings of one forked run. */
  public static final class Builder {
    private final Path javaHome;
    private boolean withAgent = true;
    private String agentArgs;
    private final List<String> jvmArgs = new ArrayList<>();
    private final List<Path> classpath = new ArrayList<>();
    private Class<?> mainClass;
    private Path jar;
    private final List<String> args = new ArrayList<>();
    private Duration timeout = DEFAULT_TIMEOUT;

    private Builder(Path javaHome) {
      this.javaHome = javaHome;
    }

    /** The agent argument (text after {@code =}); null for none. */
    public Builder agentArgs(String value) {
      this.agentArgs = value;
      return this;
    }

    /** Runs without {@code -javaagent}, for comparisons. */
    public Builder withoutAgent() {
      this.withAgent = false;
      return this;
    }

    /** Adds JVM options (before the main class). */
    public Builder jvmArgs(String... options) {
      jvmArgs.addAll(List.of(options));
      return this;
    }

    /** Adds class path entries after the test classes. */
    public Builder classpath(Path... entries) {
      classpath.addAll(List.of(entries));
      return this;
    }

    public Builder mainClass(Class<?> main) {
      this.mainClass = main;
      return this;
    }

    /** Runs {@code java -jar jar} (an executable jar) instead of a main class. */
    public Builder jar(Path executableJar) {
      this.jar = executableJar;
      return this;
    }

    public Builder args(String... values) {
      args.addAll(List.of(values));
      return this;
    }

    public Builder timeout(Duration value) {
      this.timeout = value;
      return this;
    }

    /** The command line this builder would run. */
    public List<String> command() {
      if (mainClass == null && jar == null) {
        throw new IllegalStateException("mainClass or jar is required");
      }
      List<String> command = new ArrayList<>();
      command.add(javaHome.resolve("bin/java").toString());
      if (withAgent) {
        command.add("-javaagent:" + agentJar() + (agentArgs == null ? "" : "=" + agentArgs));
      }
      command.addAll(jvmArgs);
      if (jar != null) {
        command.add("-jar");
        command.add(jar.toString());
        command.addAll(args);
        return command;
      }
      List<String> cp = new ArrayList<>();
      cp.add(locationOf(mainClass).toString());
      classpath.forEach(p -> cp.add(p.toString()));
      command.add("-cp");
      command.add(String.join(File.pathSeparator, cp));
      command.add(mainClass.getName());
      command.addAll(args);
      return command;
    }

    /** Runs the JVM to its end (or the timeout) and returns what it did. */
    public Result run() {
      List<String> command = command();
      Path out = null;
      Path err = null;
      Process process = null;
      try {
        out = Files.createTempFile("forked-jvm", ".out");
        err = Files.createTempFile("forked-jvm", ".err");
        process =
            new ProcessBuilder(command)
                .redirectOutput(out.toFile())
                .redirectError(err.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        RUNNING.add(process);
        boolean exited = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (!exited) {
          kill(process);
          process.waitFor(10, TimeUnit.SECONDS);
        }
        return new Result(
            command,
            exited ? process.exitValue() : -1,
            Files.readString(out, StandardCharsets.UTF_8),
            Files.readString(err, StandardCharsets.UTF_8),
            !exited);
      } catch (IOException e) {
        throw new IllegalStateException("cannot run " + command, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while running " + command, e);
      } finally {
        if (process != null) {
          if (process.isAlive()) {
            kill(process);
          }
          RUNNING.remove(process);
        }
        deleteQuietly(out);
        deleteQuietly(err);
      }
    }

    /**
     * Starts the JVM and returns at once. Its stdin is a pipe ({@link Running#send}); its output is
     * collected as it comes. It is killed at the timeout, and by {@link Running#close()}.
     */
    public Running start() {
      List<String> command = command();
      try {
        Process process = new ProcessBuilder(command).start();
        RUNNING.add(process);
        ScheduledFuture<?> watchdog =
            WATCHDOG.schedule(() -> kill(process), timeout.toMillis(), TimeUnit.MILLISECONDS);
        return new Running(command, process, watchdog);
      } catch (IOException e) {
        throw new IllegalStateException("cannot start " + command, e);
      }
    }

    private static void deleteQuietly(Path file) {
      if (file != null) {
        try {
          Files.deleteIfExists(file);
        } catch (IOException ignored) {
          // a temp file left behind is harmless
        }
      }
    }
  }

  /**
   * A JVM that runs while the test acts on it. Output is collected by two daemon threads; every
   * wait is an awaitility wait that fails with the whole output when the JVM exits or the time is
   * up.
   */
  public static final class Running implements AutoCloseable {
    /** Bound on each wait for output. */
    public static final Duration WAIT = Duration.ofSeconds(30);

    private final List<String> command;
    private final Process process;
    private final ScheduledFuture<?> watchdog;
    private final Writer stdin;
    private final StringBuffer out = new StringBuffer();
    private final StringBuffer err = new StringBuffer();
    private final Thread outReader;
    private final Thread errReader;

    private Running(List<String> command, Process process, ScheduledFuture<?> watchdog) {
      this.command = command;
      this.process = process;
      this.watchdog = watchdog;
      this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
      this.outReader = collect(process.getInputStream(), out, "forked-jvm-stdout");
      this.errReader = collect(process.getErrorStream(), err, "forked-jvm-stderr");
    }

    private static Thread collect(InputStream in, StringBuffer into, String name) {
      Thread t =
          new Thread(
              () -> {
                try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                  for (String line = r.readLine(); line != null; line = r.readLine()) {
                    into.append(line).append('\n');
                  }
                } catch (IOException e) {
                  // the process is gone
                }
              },
              name);
      t.setDaemon(true);
      t.start();
      return t;
    }

    public long pid() {
      return process.pid();
    }

    public boolean isAlive() {
      return process.isAlive();
    }

    /** Writes one line to the JVM's stdin. */
    public void send(String line) {
      try {
        stdin.write(line + "\n");
        stdin.flush();
      } catch (IOException e) {
        throw new AssertionError("cannot write to the JVM: " + e + "\n" + describe(), e);
      }
    }

    public String stdout() {
      return out.toString();
    }

    public String stderr() {
      return err.toString();
    }

    /** The value of the last stdout line {@code key=value} so far, or null. */
    public String value(String key) {
      return Result.lastValue(stdout(), key);
    }

    /** Waits for a stdout line {@code key=value} and returns the value. */
    public String awaitValue(String key) {
      awaitOutput("stdout line " + key + "=", () -> value(key) != null);
      return value(key);
    }

    /** Waits until stderr satisfies {@code condition}, e.g. holds a reload line. */
    public void awaitStderr(String what, Predicate<String> condition) {
      awaitOutput(what, () -> condition.test(stderr()));
    }

    /** Waits until stderr holds {@code fragment} at least {@code times} times. */
    public void awaitStderrCount(String fragment, int times) {
      awaitStderr(times + " x \"" + fragment + "\" on stderr", s -> count(s, fragment) >= times);
    }

    /** How many times {@code fragment} occurs in {@code text}. */
    public static int count(String text, String fragment) {
      int n = 0;
      for (int i = text.indexOf(fragment); i >= 0; i = text.indexOf(fragment, i + 1)) {
        n++;
      }
      return n;
    }

    private void awaitOutput(String what, java.util.concurrent.Callable<Boolean> condition) {
      try {
        Awaitility.await(what)
            .atMost(WAIT)
            .pollInterval(Duration.ofMillis(20))
            .until(
                () -> {
                  if (condition.call()) {
                    return true;
                  }
                  if (!process.isAlive()) {
                    throw new AssertionError("the JVM exited while waiting for " + what);
                  }
                  return false;
                });
      } catch (ConditionTimeoutException | AssertionError e) {
        throw new AssertionError(e.getMessage() + "\n" + describe(), e);
      }
    }

    /**
     * Closes stdin (the apps end at end of input), waits for the JVM to exit (killing it after
     * {@code bound}) and returns what it did.
     */
    public Result finish(Duration bound) {
      try {
        try {
          stdin.close();
        } catch (IOException ignored) {
          // already gone
        }
        boolean exited = process.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS);
        if (!exited) {
          kill(process);
          process.waitFor(10, TimeUnit.SECONDS);
        }
        outReader.join(5000);
        errReader.join(5000);
        return new Result(command, exited ? process.exitValue() : -1, stdout(), stderr(), !exited);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while stopping " + command, e);
      } finally {
        close();
      }
    }

    /** Kills the JVM if it still runs. */
    @Override
    public void close() {
      watchdog.cancel(false);
      if (process.isAlive()) {
        kill(process);
      }
      RUNNING.remove(process);
    }

    public String describe() {
      return String.join(" ", command)
          + "\nalive="
          + process.isAlive()
          + "\n--- stdout\n"
          + stdout()
          + "--- stderr\n"
          + stderr();
    }
  }

  /**
   * What a forked JVM did.
   *
   * @param command the command line
   * @param exitCode its exit code, -1 if it was killed at the timeout
   * @param stdout everything it printed on stdout
   * @param stderr everything it printed on stderr
   * @param timedOut true if it was killed at the timeout
   */
  public record Result(
      List<String> command, int exitCode, String stdout, String stderr, boolean timedOut) {

    /** The value of the last stdout line {@code key=value}, or null. */
    public String value(String key) {
      return lastValue(stdout, key);
    }

    static String lastValue(String text, String key) {
      String found = null;
      for (String line : text.split("\\R")) {
        if (line.startsWith(key + "=")) {
          found = line.substring(key.length() + 1);
        }
      }
      return found;
    }

    /** Stderr lines that start with {@code prefix}. */
    public List<String> stderrLines(String prefix) {
      List<String> lines = new ArrayList<>();
      for (String line : stderr.split("\\R")) {
        if (line.startsWith(prefix)) {
          lines.add(line);
        }
      }
      return lines;
    }

    /** A readable account for assertion messages. */
    public String describe() {
      return String.join(" ", command)
          + "\nexit="
          + exitCode
          + (timedOut ? " (timed out)" : "")
          + "\n--- stdout\n"
          + stdout
          + "--- stderr\n"
          + stderr;
    }
  }
}
