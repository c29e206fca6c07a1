package dev.retryagent.agent;

import dev.retryagent.agent.apache.ApacheInstallation;
import dev.retryagent.agent.jdk.JdkHttpInstallation;
import dev.retryagent.agent.okhttp.OkHttpInstallation;
import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.BridgeInstaller;
import dev.retryagent.agent.tooling.CauseLine;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.urlconnection.UrlConnectionInstallation;
import dev.retryagent.cli.ConfigSummary;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigException;
import dev.retryagent.config.ConfigProblem;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.launcher.AgentInstaller;
import dev.retryagent.launcher.AgentStarter;
import dev.retryagent.policy.Mode;
import java.lang.instrument.Instrumentation;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Installs the agent inside its own class loader; called once per JVM by {@link AgentStarter} (in
 * the system class loader), which prints the returned line.
 */
public final class Installer implements AgentInstaller {
  static {
    AgentStarter.register(new Installer());
  }

  private Installer() {}

  /**
   * System property that holds the start-up line in the JVM the agent runs in: {@code attach} reads
   * it back through the Attach API, and operators can see it ({@code jcmd PID
   * VM.system_properties}).
   */
  public static final String STATUS_PROPERTY = "retryagent.status";

  @Override
  public String install(String agentArgs, Instrumentation inst, boolean atStartup) {
    String line = installAgent(agentArgs, inst, System.getProperties(), System.getenv(), atStartup);
    try {
      System.setProperty(STATUS_PROPERTY, line);
    } catch (SecurityException e) {
      // only attach's read-back is lost; the start-up line is printed anyway
    }
    return line;
  }

  /**
   * Reads the configuration and arms the hooks it enables.
   *
   * @return the start-up line (without the {@code retry-agent <version>:} prefix)
   */
  static String installAgent(
      String agentArgs,
      Instrumentation inst,
      Properties props,
      Map<String, String> env,
      boolean atStartup) {
    // A class that the JDK's ConcurrentHashMap needs while it is itself being loaded must not be
    // loaded for the first time from inside a transformer (ClassCircularityError, JDK-8164165).
    ThreadLocalRandom.current();

    ConfigSources sources;
    byte[] content; // the file's, null without one
    AgentConfig config;
    try {
      sources = ConfigSources.resolve(agentArgs, props, env);
      if (sources.mode() == Mode.OFF) {
        // The kill switch: an override applies to every reload too, so no edit of the file could
        // switch the agent on. Every class is left alone, and the file is not even read: a file
        // broken since (with strict: true) must not stop the JVM the agent was turned off in.
        return "nothing hooked (mode=off from the "
            + sources.modeOrigin()
            + ", which every reload keeps); config="
            + (sources.configFile() == null
                ? AgentConfig.BUILT_IN
                : pathInLine(sources.configFile()) + " (not read)");
      }
      content = sources.read(env);
      config = sources.load(content, env);
    } catch (ConfigException e) {
      return invalidConfiguration(e, atStartup);
    }

    boolean reloadable = sources.configFile() != null && config.reload();
    if (config.mode() == Mode.OFF && !reloadable) {
      // Nothing could ever switch it on: leave every class alone.
      return "nothing hooked (mode=off); "
          + describe(sources, config)
          + ConfigSummary.warnings(config);
    }
    if (config.clients().jdkHttp()
        || config.clients().okhttp()
        || config.clients().apacheHttpClient()
        || config.clients().urlConnection()) {
      // Before any transformer: a rewritten class links to the bridge at once.
      try {
        BridgeInstaller.install(inst);
      } catch (Exception | LinkageError e) {
        return "not installed, the application runs without retries: "
            + BridgeInstaller.NAME
            + " could not be defined ("
            + CauseLine.of(e)
            + ")";
      }
    }
    AgentRuntime runtime = new AgentRuntime(sources, config);
    // Each client's handler is registered before its transformer is added; then one look at the
    // classes already loaded serves all four.
    String[] hooks =
        HookTransformer.installAll(
            inst,
            config.clients().jdkHttp() && AgentRuntime.hasJavaNetHttp()
                ? JdkHttpInstallation.arm(inst, runtime)
                : null,
            config.clients().okhttp() ? OkHttpInstallation.arm(runtime) : null,
            config.clients().apacheHttpClient() ? ApacheInstallation.arm(runtime) : null,
            config.clients().urlConnection() ? UrlConnectionInstallation.arm(inst, runtime) : null);
    StringBuilder line = new StringBuilder();
    line.append(
        hooks[0] != null
            ? hooks[0]
            : config.clients().jdkHttp()
                ? "jdk-http absent (no java.net.http module in this runtime)"
                : "jdk-http off (agent.clients.jdk-http: false)");
    line.append("; ")
        .append(hooks[1] != null ? hooks[1] : "okhttp off (agent.clients.okhttp: false)");
    line.append("; ")
        .append(
            hooks[2] != null
                ? hooks[2]
                : "apache-httpclient off (agent.clients.apache-httpclient: false)");
    line.append("; ")
        .append(
            hooks[3] != null
                ? hooks[3]
                : "url-connection off (agent.clients.url-connection: false)");
    line.append("; ").append(describe(sources, config));
    String warnings = ConfigSummary.warnings(config);
    // The hooks are live from here on: the calls are retried whatever fails below (the JVM
    // shutting down under a late attach, no thread to be had, a SecurityManager), so the line
    // must say so and name what did not start, never "not installed". Only the cause's class:
    // its message may hold a path or a URL. Strict never applies here: it is for configuration.
    try {
      Throwable fault = exitHookFault;
      if (fault != null) {
        throw fault;
      }
      runtime.registerShutdownHook();
    } catch (Throwable t) {
      line.append("; no exit hook (")
          .append(t.getClass().getName())
          .append("): no summary, dead-letter flush or fleet leave at exit");
    }
    try {
      Throwable fault = backgroundFault;
      if (fault != null) {
        throw fault;
      }
      runtime.startBackground(reloadable ? sources.configFile() : null, content);
    } catch (Throwable t) {
      line.append("; exporters' and config watcher's start not scheduled (")
          .append(t.getClass().getName())
          .append(runtime.startsAtFirstCall() ? "): tried again at the first call" : ")");
    }
    return line.append(warnings).toString();
  }

  /**
   * Test seams: thrown in place of registering the exit hook, and of scheduling the exporters' and
   * the watcher's start, as the JVM may refuse either once the hooks are live.
   */
  static volatile Throwable exitHookFault;

  static volatile Throwable backgroundFault;

  /** The start-up line's configuration part: which file, which mode, and who said so. */
  static String describe(ConfigSources sources, AgentConfig config) {
    StringBuilder b = new StringBuilder("config=");
    if (sources.configFile() == null) {
      b.append(AgentConfig.BUILT_IN);
    } else {
      b.append(pathInLine(sources.configFile()));
      if (!sources.configOrigin().equals("agent argument")) {
        b.append(" (").append(sources.configOrigin()).append(')');
      }
    }
    b.append(", mode=").append(config.mode().configName());
    if (sources.mode() != null) {
      b.append(" (").append(sources.modeOrigin()).append(')');
    }
    if (sources.configFile() != null) {
      b.append(", reload=").append(config.reload() ? "on" : "off");
    }
    return b.toString();
  }

  /**
   * The configuration file's path as the start-up line gives it: as it is, unless it holds what
   * separates the line's parts ({@code ", "} or {@code "; "}, or a comma or semicolon at its end,
   * before the origin's {@code " ("}), starts with a double quote, or holds a control character or
   * a line separator. Such a path is given in double quotes, with {@code \"}, {@code \\} and {@code
   * \}{@code uXXXX} escapes: {@code attach} reads the line back to tell whether the file is
   * watched, and a path holding {@code ", reload=on; "} must not say so for it; the line stays one
   * line.
   */
  static String pathInLine(Object path) {
    String p = String.valueOf(path);
    boolean plain = !p.startsWith("\"");
    for (int i = 0; plain && i < p.length(); i++) {
      char c = p.charAt(i);
      plain =
          !(c < ' ' || c == 0x7f || c == 0x85 || c == 0x2028 || c == 0x2029)
              && !((c == ',' || c == ';') && (i + 1 == p.length() || p.charAt(i + 1) == ' '));
    }
    if (plain) {
      return p;
    }
    StringBuilder b = new StringBuilder(p.length() + 8).append('"');
    for (int i = 0; i < p.length(); i++) {
      char c = p.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < ' ' || c == 0x7f || c == 0x85 || c == 0x2028 || c == 0x2029) {
        String hex = Integer.toHexString(c);
        b.append("\\u");
        for (int pad = hex.length(); pad < 4; pad++) {
          b.append('0');
        }
        b.append(hex);
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  /**
   * {@code strict: true}: the JVM stops before {@code main} with every problem. Otherwise, and
   * always after a late attach (stopping a running service for a typo would be worse than no
   * retries), one error (listing the problems) and the application runs without retries.
   */
  private static String invalidConfiguration(ConfigException e, boolean atStartup) {
    StringBuilder text = new StringBuilder();
    if (e.problems().size() == 1) {
      text.append(": ").append(e.problems().get(0));
    } else {
      text.append(" (").append(e.problems().size()).append(" problems):");
      for (ConfigProblem p : e.problems()) {
        text.append(System.lineSeparator()).append("  ").append(p);
      }
    }
    if (e.strict() && atStartup) {
      System.err.println(
          "retry-agent: invalid configuration and strict: true, stopping the JVM" + text);
      System.err.flush();
      System.exit(1);
    }
    String instead;
    if (!atStartup) {
      instead = "attached late: strict stops a JVM only at start-up";
    } else if (e.strictOrigin() != null) {
      // The override wins over the file: "set agent.strict: true" would change nothing.
      instead = "strict=false from the " + e.strictOrigin();
    } else if (e.noFile()) {
      // The built-in defaults with an invalid override: no file holds an agent.strict to set.
      instead =
          "no configuration file named, so no agent.strict; give strict=true in the agent argument"
              + " to stop instead";
    } else if (e.strictUnread()) {
      // The file may set it after its error, or be unreadable: only the override can stop it.
      instead =
          "agent.strict could not be read from the file; give strict=true in the agent argument"
              + " to stop instead";
    } else {
      instead = "set agent.strict: true to stop instead";
    }
    return "not installed, the application runs without retries: invalid configuration ("
        + instead
        + ")"
        + text;
  }
}
