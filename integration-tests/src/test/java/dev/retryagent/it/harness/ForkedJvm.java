package dev.retryagent.it.harness;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

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
 */
public final class ForkedJvm {
  /** Default bound on one forked JVM. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

  private static final Set<Process> RUNNING = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(() -> RUNNING.forEach(ForkedJvm::kill), "forked-jvm-reaper"));
  }

  private ForkedJvm() {}

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
      String found = null;
      for (String line : stdout.split("\\R")) {
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
