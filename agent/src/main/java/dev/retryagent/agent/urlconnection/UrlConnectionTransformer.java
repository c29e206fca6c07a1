package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.CauseLine;
import dev.retryagent.agent.tooling.ForeignLoaders;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.tooling.LoaderNames;
import dev.retryagent.agent.tooling.ProloguePatcher;
import java.util.List;

/**
 * The {@code HttpURLConnection} hook's classes, all in {@code java.base} (boot loader):
 *
 * <ul>
 *   <li>{@code sun.net.www.protocol.http.Handler} and {@code ...https.Handler}: {@link
 *       HandlerPatch} (no ASM: the JDK loads them for any {@code http:} URL object, JCE's start-up
 *       included), or {@link UrlHooks#handlerEpilogue} for a method of another shape;
 *   <li>{@code sun.net.www.http.HttpClient} (first connect): the resend switch at the start of
 *       {@code parseHTTP} ({@link UrlHooks} says what it is), patched into the bytes by {@link
 *       ProloguePatcher} (no ASM either), or by {@link UrlHooks#parseHttpPrologue} for a class file
 *       the patcher declines;
 *   <li>{@code sun.net.www.protocol.http.HttpURLConnection} is not changed: its loading (the first
 *       {@code openConnection}, just before the handler calls the bridge) is when the hook is
 *       activated ({@link UrlActivation}).
 * </ul>
 *
 * All of them call {@code java.lang.RetryAgentBridge}, which the agent defined before adding this
 * transformer, in {@code java.base} like them.
 *
 * <p>Every class the JVM defines meets one prefix test here. A class that cannot be rewritten stays
 * unchanged and is reported once: {@code HttpURLConnection} then runs without retries, or (only
 * {@code HttpClient}) with the JDK's own resends as they are.
 */
final class UrlConnectionTransformer extends HookTransformer {
  static final String PACKAGES = "sun/net/www/";
  static final String HTTP_HANDLER = "sun/net/www/protocol/http/Handler";
  static final String HTTPS_HANDLER = "sun/net/www/protocol/https/Handler";
  static final String HTTP_CLIENT = UrlHooks.HTTP_CLIENT;
  static final String CONNECTION = "sun/net/www/protocol/http/HttpURLConnection";

  /**
   * {@code parseHTTP(MessageHeader, ...)}: JDK 17's takes a {@code ProgressSource} between, JDK
   * 25's does not.
   */
  static final String PARSE_START = "(Lsun/net/www/MessageHeader;";

  static final String PARSE_END = "Lsun/net/www/protocol/http/HttpURLConnection;)Z";

  /**
   * The application's own copy of the library's transport ({@code RetryingUrlConnections} of
   * retry-agent-core, used by hand beside the agent): each connection it opens for an attempt is
   * the JDK's, past the agent's hook ({@link Bridge#URL_LIBRARY_OPEN}), so that the library alone
   * retries it.
   */
  static final String LIBRARY = "dev/retryagent/urlconnection/DirectUrlTransport";

  static final String LIBRARY_NAME = "dev.retryagent.urlconnection.DirectUrlTransport";

  private static final String OPEN_DESC =
      "(Ljava/net/URL;Ljava/net/Proxy;)Ljava/net/URLConnection;";

  private final UrlActivation activation;
  private volatile Throwable failure;
  private volatile boolean libraryFailed;

  UrlConnectionTransformer(UrlActivation activation) {
    super("url-connection", "openConnection http/https, JDK resend", "the JDK's protocol handlers");
    this.activation = activation;
  }

  @Override
  protected boolean matches(String internalName) {
    return internalName != null
        && ((internalName.startsWith(PACKAGES)
                && (internalName.equals(HTTP_HANDLER)
                    || internalName.equals(HTTPS_HANDLER)
                    || internalName.equals(HTTP_CLIENT)
                    || internalName.equals(CONNECTION)))
            || internalName.equals(LIBRARY));
  }

  @Override
  protected boolean accepts(Module module, ClassLoader loader, String internalName) {
    if (internalName.equals(LIBRARY)) {
      // the application's copy of the library, never the agent's own (its loader or a glue's)
      return loader != null && !ForeignLoaders.leavesAlone(loader) && linksToBridge(loader);
    }
    return loader == null && module != null && "java.base".equals(module.getName());
  }

  @Override
  protected boolean retransforms(Class<?> loaded) {
    String name = loaded.getName();
    if (name.equals(LIBRARY_NAME)) {
      ClassLoader loader = loaded.getClassLoader();
      return loader != null && !ForeignLoaders.leavesAlone(loader);
    }
    return name.startsWith("sun.net.www.")
        && (name.equals("sun.net.www.protocol.http.Handler")
            || name.equals("sun.net.www.protocol.https.Handler")
            || name.equals("sun.net.www.http.HttpClient")
            || name.equals("sun.net.www.protocol.http.HttpURLConnection"))
        && loaded.getClassLoader() == null;
  }

  @Override
  protected byte[] rewrite(String internalName, byte[] classfile) {
    if (internalName.equals(LIBRARY)) {
      return library(classfile);
    }
    if (internalName.equals(CONNECTION)) {
      activation.ensure(); // left unchanged; a failure is reported by the activation
      return null;
    }
    if (internalName.equals(HTTP_CLIENT)) {
      byte[] patched = resendSwitch(classfile);
      return patched != null ? patched : UrlHooks.parseHttpPrologue(classfile);
    }
    byte[] patched = HandlerPatch.patch(classfile);
    return patched != null ? patched : UrlHooks.handlerEpilogue(classfile);
  }

  /**
   * The library's transport with its prologue, and the hook's handler registered (the copy is
   * defined before any of its methods runs).
   *
   * @throws IllegalStateException for a class file the patcher declines: it stays unchanged
   */
  private static byte[] library(byte[] classfile) {
    byte[] patched =
        ProloguePatcher.patch(
            classfile,
            List.of(
                new ProloguePatcher.Target(
                    "open",
                    OPEN_DESC,
                    Bridge.URL_LIBRARY_OPEN,
                    new int[] {1, 2},
                    "java/net/URLConnection")));
    if (patched == null) {
      throw new IllegalStateException("its open(URL, Proxy) could not be patched");
    }
    UrlEntry.registerLibrary();
    return patched;
  }

  /**
   * {@code HttpClient} with the resend switch patched in; null if the patcher declines it. The
   * target is made here, once per JVM, not in a field: this class loads in {@code premain}, the
   * patcher's classes at the first connection.
   */
  static byte[] resendSwitch(byte[] classfile) {
    return ProloguePatcher.patch(
        classfile,
        List.of(
            ProloguePatcher.Target.setBooleanField(
                "parseHTTP", PARSE_START, PARSE_END, Bridge.URL_RESEND, "failedOnce")));
  }

  @Override
  protected void failed(ClassLoader loader, String internalName, Throwable cause) {
    if (internalName.equals(LIBRARY)) {
      // The JDK's connections are hooked all the same: only the library's own are affected.
      if (!libraryFailed) {
        libraryFailed = true;
        AgentLog.error(
            "the application's own retry-agent-core (RetryingUrlConnections) in "
                + LoaderNames.describe(loader)
                + " is not recognised ("
                + CauseLine.of(cause)
                + "): its HttpURLConnection calls are retried by the library and by the agent");
      }
      return;
    }
    if (failure == null) {
      failure = cause;
      AgentLog.error(
          internalName.equals(HTTP_CLIENT)
              ? "url-connection: the JDK's own resend of a request on a broken kept-alive"
                  + " connection stays as it is, not counted (could not instrument"
                  + " sun.net.www.http.HttpClient: "
                  + CauseLine.of(cause)
                  + ")"
              : "url-connection NOT hooked, HttpURLConnection runs without retries: could not"
                  + " instrument "
                  + internalName.replace('/', '.')
                  + " ("
                  + CauseLine.of(cause)
                  + ")");
    }
  }

  @Override
  protected String notHookedReason() {
    Throwable t = failure;
    if (t == null) {
      // the classes may all be rewritten, and yet the hooks never reach the agent
      t = activation.failure();
      return t == null
          ? null
          : "could not open the JDK's protocol packages to the agent (" + CauseLine.of(t) + ")";
    }
    return CauseLine.of(t);
  }
}
