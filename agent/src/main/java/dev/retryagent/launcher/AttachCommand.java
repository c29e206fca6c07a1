package dev.retryagent.launcher;

import com.sun.tools.attach.AgentInitializationException;
import com.sun.tools.attach.AgentLoadException;
import com.sun.tools.attach.AttachNotSupportedException;
import com.sun.tools.attach.VirtualMachine;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Properties;

/**
 * {@code attach PID [FILE] [--mode MODE]}: loads this jar into a running JVM with the JDK Attach
 * API ({@code jdk.attach}, visible to the application class loader only, hence this class sits on
 * the launcher side).
 *
 * <p>The file is validated here first, so a typo never reaches the running service. The agent's
 * start-up line goes to the target's stderr; the agent also records it in the target's system
 * property {@value #STATUS_PROPERTY}, which this command reads back and prints. A JVM that already
 * has the agent (from {@code -javaagent} or an earlier attach) is left alone.
 */
final class AttachCommand {
  /** Set by the agent's installer in the JVM it runs in: its start-up line. */
  static final String STATUS_PROPERTY = "retryagent.status";

  static final String DYNAMIC_LOADING_FLAG = "-XX:+EnableDynamicAgentLoading";

  private static final String USAGE = "usage: attach PID [FILE] [--mode enforce|observe|off]";

  private final PrintStream out;
  private final PrintStream err;

  AttachCommand(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  int run(String[] args) {
    String pid = null;
    String file = null;
    String mode = null;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--mode")) {
        // The last argument: its value is missing, not the option unknown.
        mode = i + 1 < args.length ? args[++i] : "";
      } else if (a.startsWith("--mode=")) {
        mode = a.substring("--mode=".length());
      } else if (a.startsWith("-")) {
        return usage("unknown option " + a);
      } else if (pid == null) {
        pid = a;
      } else if (file == null) {
        file = a;
      } else {
        return usage("too many arguments");
      }
    }
    if (pid == null || !pid.matches("[0-9]{1,19}")) {
      return usage(pid == null ? "PID is missing" : "PID must be a process id, found " + pid);
    }
    if (mode != null && mode.isEmpty()) {
      return usage("--mode needs a value: enforce, observe or off");
    }
    if (mode != null && !mode.matches("enforce|observe|off")) {
      return usage("--mode must be enforce, observe or off, found " + mode);
    }
    Path config = null;
    if (file != null) {
      config = checkedConfig(file);
      if (config == null) {
        return CommandLine.FAILED;
      }
    }
    File jar;
    try {
      jar = AgentJarFile.location();
    } catch (Exception e) {
      err.println("retry-agent: cannot find the agent jar: " + e);
      return CommandLine.FAILED;
    }
    if (!jar.isFile()) {
      err.println("retry-agent: attach needs the packaged retry-agent.jar, not " + jar);
      return CommandLine.FAILED;
    }
    String options;
    try {
      options = agentOptions(config, mode);
    } catch (IllegalArgumentException e) {
      err.println("retry-agent: " + e.getMessage());
      return CommandLine.FAILED;
    }
    return attach(pid, jar, options);
  }

  private int usage(String problem) {
    err.println("retry-agent: attach: " + problem);
    err.println(USAGE);
    return CommandLine.USAGE;
  }

  /** The absolute path of a valid configuration file, or null after saying what is wrong. */
  private Path checkedConfig(String file) {
    Path path;
    try {
      path = Paths.get(file).toAbsolutePath().normalize();
    } catch (InvalidPathException e) {
      err.println("retry-agent: not attached: invalid path " + file);
      return null;
    }
    if (!Files.isRegularFile(path)) {
      err.println("retry-agent: not attached: " + path + " is not a file");
      return null;
    }
    // The target reads the same file; ${NAME} is resolved from its environment, not ours.
    int valid = HiddenCommands.run(new String[] {"validate", path.toString()}, out, err);
    if (valid != CommandLine.OK) {
      err.println("retry-agent: not attached: the configuration is not valid");
      return null;
    }
    return path;
  }

  /** {@code config=PATH[,mode=MODE]}, the path quoted when it holds a comma; null for none. */
  static String agentOptions(Path config, String mode) {
    StringBuilder b = new StringBuilder();
    if (config != null) {
      String p = config.toString();
      if (p.indexOf(',') >= 0 || p.indexOf('\'') >= 0 || p.indexOf('"') >= 0) {
        if (p.indexOf('\'') < 0) {
          p = "'" + p + "'";
        } else if (p.indexOf('"') < 0) {
          p = '"' + p + '"';
        } else {
          throw new IllegalArgumentException(
              "not attached: a path with both kinds of quotes cannot be passed: " + p);
        }
      }
      b.append("config=").append(p);
    }
    if (mode != null) {
      b.append(b.length() == 0 ? "" : ",").append("mode=").append(mode);
    }
    return b.length() == 0 ? null : b.toString();
  }

  private int attach(String pid, File jar, String options) {
    VirtualMachine vm;
    try {
      vm = VirtualMachine.attach(pid);
    } catch (AttachNotSupportedException | IOException e) {
      err.println(
          "retry-agent: cannot attach to "
              + pid
              + ": "
              + e.getMessage()
              + " (is it a running JVM of this user, on this machine and in this container?)");
      return CommandLine.FAILED;
    }
    try {
      Properties props = vm.getSystemProperties();
      String existing = props.getProperty(STATUS_PROPERTY);
      if (existing != null) {
        return alreadyThere(pid, existing);
      }
      int feature = featureVersion(props.getProperty("java.specification.version"));
      if (feature < 11) {
        err.println(
            "retry-agent: cannot attach to "
                + pid
                + ": it runs Java "
                + props.getProperty("java.specification.version")
                + ", the agent needs 11 or later");
        return CommandLine.FAILED;
      }
      if (feature >= 21 && !dynamicLoadingAllowed(vm)) {
        out.println(
            "note: JDK "
                + feature
                + " prints a warning on "
                + pid
                + "'s stderr that an agent was loaded dynamically; start it with "
                + DYNAMIC_LOADING_FLAG
                + " to allow this without a warning");
      }
      vm.loadAgent(jar.getPath(), options);
      String status = vm.getSystemProperties().getProperty(STATUS_PROPERTY);
      if (status == null) {
        err.println(
            "retry-agent: loaded into " + pid + " but it did not report; see the stderr of " + pid);
        return CommandLine.FAILED;
      }
      out.println("attached to " + pid + ": " + status);
      return status.startsWith("not installed") ? CommandLine.FAILED : CommandLine.OK;
    } catch (AgentLoadException | AgentInitializationException e) {
      err.println(
          "retry-agent: the JVM "
              + pid
              + " refused the agent: "
              + e.getMessage()
              + " (was it started with -XX:-EnableDynamicAgentLoading or"
              + " -XX:+DisableAttachMechanism? see its stderr)");
      return CommandLine.FAILED;
    } catch (IOException e) {
      err.println("retry-agent: attaching to " + pid + " failed: " + e);
      return CommandLine.FAILED;
    } finally {
      try {
        vm.detach();
      } catch (IOException ignored) {
        // the target went away: nothing left to release
      }
    }
  }

  /**
   * Says that {@code pid} already has the agent, whose start-up line is {@code existing}, and what
   * changes it; returns the exit code. Only a file that is watched ({@link #watchesItsFile}) takes
   * an edit: an agent that was not installed (an invalid file at start), that hooked nothing
   * ({@code mode=off} without reload, or from an override) or whose file is not watched keeps what
   * it has until the JVM restarts, whatever the file says later.
   */
  int alreadyThere(String pid, String existing) {
    out.println("retry-agent is already in " + pid + ": " + existing);
    if (watchesItsFile(existing)) {
      out.println("not attached again; edit its configuration file to change it (agent.reload)");
    } else {
      out.println(
          "not attached again; nothing reloads its configuration there, so only a restart of "
              + pid
              + " changes this");
    }
    return existing.startsWith("not installed") ? CommandLine.FAILED : CommandLine.OK;
  }

  /**
   * Whether the start-up line {@code existing} says the file is watched: {@code reload=on} ends its
   * configuration part ({@code config=PATH, mode=..., reload=on}), which may be followed by parts
   * each starting with {@code "; "} (warnings, no exit hook, the watcher's start not scheduled),
   * and the watcher's start was not given up. A path in double quotes is skipped whole (it may hold
   * {@code ", reload=on; "}); an agent before that quoting gave every path as it is.
   */
  static boolean watchesItsFile(String existing) {
    if (existing.startsWith("not installed") || existing.startsWith("nothing hooked")) {
      return false;
    }
    int config = existing.indexOf("; config=");
    if (config < 0) {
      return false;
    }
    config += "; config=".length();
    if (existing.startsWith("\"", config)) {
      // a path that holds "; " or ", " is quoted (Installer.pathInLine): what follows the closing
      // quote is the agent's, whatever the path says
      int i = config + 1;
      while (i < existing.length() && existing.charAt(i) != '"') {
        i += existing.charAt(i) == '\\' ? 2 : 1;
      }
      if (i >= existing.length()) {
        return false; // cut short: nothing to go by
      }
      config = i + 1;
    }
    // the first ", reload=on" or ", reload=off" that ends a part: the configuration's (a warning
    // after it may quote anything, the file's text included)
    String reload = ", reload=";
    int at = existing.indexOf(reload, config);
    boolean on = false;
    while (at >= 0) {
      int value = at + reload.length();
      int end =
          existing.startsWith("on", value)
              ? value + 2
              : existing.startsWith("off", value) ? value + 3 : -1;
      if (end > 0 && (end == existing.length() || existing.startsWith("; ", end))) {
        on = end == value + 2;
        break;
      }
      at = existing.indexOf(reload, value);
    }
    if (!on) {
      return false;
    }
    String notScheduled = "; exporters' and config watcher's start not scheduled (";
    int late = existing.indexOf(notScheduled, at);
    if (late < 0) {
      return true;
    }
    int close = existing.indexOf(')', late + notScheduled.length());
    // only a start tried again at the first call still watches
    return close >= 0 && existing.startsWith("): tried again at the first call", close);
  }

  /** True when the target was started with {@value #DYNAMIC_LOADING_FLAG}. */
  private static boolean dynamicLoadingAllowed(VirtualMachine vm) {
    try {
      Properties agent = vm.getAgentProperties();
      String args =
          agent.getProperty("sun.jvm.args", "") + " " + agent.getProperty("sun.jvm.flags", "");
      return args.contains(DYNAMIC_LOADING_FLAG);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** {@code 17} for "17", {@code 8} for "1.8"; 0 when unreadable. */
  static int featureVersion(String specVersion) {
    if (specVersion == null) {
      return 0;
    }
    String v = specVersion.startsWith("1.") ? specVersion.substring(2) : specVersion;
    int dot = v.indexOf('.');
    try {
      return Integer.parseInt(dot < 0 ? v : v.substring(0, dot));
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
