package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.HookTransformer;
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

  private final UrlActivation activation;
  private volatile Throwable failure;

  UrlConnectionTransformer(UrlActivation activation) {
    super("url-connection", "openConnection http/https, JDK resend", "the JDK's protocol handlers");
    this.activation = activation;
  }

  @Override
  protected boolean matches(String internalName) {
    return internalName != null
        && internalName.startsWith(PACKAGES)
        && (internalName.equals(HTTP_HANDLER)
            || internalName.equals(HTTPS_HANDLER)
            || internalName.equals(HTTP_CLIENT)
            || internalName.equals(CONNECTION));
  }

  @Override
  protected boolean accepts(Module module, ClassLoader loader, String internalName) {
    return loader == null && module != null && "java.base".equals(module.getName());
  }

  @Override
  protected boolean retransforms(Class<?> loaded) {
    String name = loaded.getName();
    return name.startsWith("sun.net.www.")
        && (name.equals("sun.net.www.protocol.http.Handler")
            || name.equals("sun.net.www.protocol.https.Handler")
            || name.equals("sun.net.www.http.HttpClient")
            || name.equals("sun.net.www.protocol.http.HttpURLConnection"))
        && loaded.getClassLoader() == null;
  }

  @Override
  protected byte[] rewrite(String internalName, byte[] classfile) {
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
    if (failure == null) {
      failure = cause;
      AgentLog.error(
          internalName.equals(HTTP_CLIENT)
              ? "url-connection: the JDK's own resend of a request on a broken kept-alive"
                  + " connection stays as it is, not counted (could not instrument"
                  + " sun.net.www.http.HttpClient: "
                  + cause
                  + ")"
              : "url-connection NOT hooked, HttpURLConnection runs without retries: could not"
                  + " instrument "
                  + internalName.replace('/', '.')
                  + " ("
                  + cause
                  + ")");
    }
  }

  @Override
  protected String notHookedReason() {
    Throwable t = failure;
    return t == null ? null : t.toString();
  }
}
