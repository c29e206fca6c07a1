package dev.retryagent.agent.okhttp;

import java.io.IOException;
import java.io.InputStream;
import java.security.ProtectionDomain;

/**
 * Defines the agent's OkHttp-facing classes ({@code dev.retryagent.okhttp.*}, the library's
 * interceptor and async retrier, and {@code dev.retryagent.agent.okhttp.glue.*}, the agent's glue)
 * next to one copy of OkHttp: its parent is the loader that defined OkHttp, so {@code okhttp3},
 * {@code okio} and {@code kotlin} resolve there, whether that is the system loader, a Spring Boot
 * fat jar's loader, a child-first web-app loader or a plain {@code URLClassLoader}. Every other
 * {@code dev.retryagent.*} class, the relocated libraries included, comes from the agent's own
 * loader, so the engine is the one the rest of the agent uses.
 *
 * <p>The bytes are the agent jar's hidden {@code inst/**.classdata} entries (read through the
 * agent's loader), or plain {@code .class} resources when the agent runs unpackaged (tests).
 */
final class OkHttpClassLoader extends ClassLoader {
  static {
    registerAsParallelCapable();
  }

  /**
   * The glue's package. Only this subpackage of {@code dev.retryagent.agent.okhttp} is defined
   * here: the rest of it (this loader, the transformer, {@link OkHttpSupport}) belongs to the
   * agent's loader, which every OkHttp copy shares.
   */
  static final String GLUE_PACKAGE = "dev.retryagent.agent.okhttp.glue.";

  private static final String[] OWN_PACKAGES = {"dev.retryagent.okhttp.", GLUE_PACKAGE};

  private final ClassLoader agentLoader;
  private final ProtectionDomain domain;

  /**
   * @param okhttpLoader the loader that defined OkHttp ({@code null}: the bootstrap loader)
   * @param agentLoader the agent's loader, for its other classes and for the hidden bytes
   */
  OkHttpClassLoader(ClassLoader okhttpLoader, ClassLoader agentLoader) {
    super("retry-agent-okhttp", okhttpLoader);
    this.agentLoader = agentLoader;
    this.domain = OkHttpClassLoader.class.getProtectionDomain();
  }

  static boolean isOwn(String className) {
    for (String p : OWN_PACKAGES) {
      if (className.startsWith(p)) {
        return true;
      }
    }
    return false;
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    if (!name.startsWith("dev.retryagent.")) {
      return super.loadClass(name, resolve);
    }
    if (!isOwn(name)) {
      return agentLoader.loadClass(name);
    }
    synchronized (getClassLoadingLock(name)) {
      Class<?> c = findLoadedClass(name);
      if (c == null) {
        c = findClass(name);
      }
      if (resolve) {
        resolveClass(c);
      }
      return c;
    }
  }

  @Override
  protected Class<?> findClass(String name) throws ClassNotFoundException {
    if (!isOwn(name)) {
      throw new ClassNotFoundException(name);
    }
    String path = name.replace('.', '/');
    byte[] bytes = read(path + ".classdata");
    if (bytes == null) {
      bytes = read(path + ".class");
    }
    if (bytes == null) {
      throw new ClassNotFoundException(name);
    }
    return defineClass(name, bytes, 0, bytes.length, domain);
  }

  private byte[] read(String resource) throws ClassNotFoundException {
    try (InputStream in = agentLoader.getResourceAsStream(resource)) {
      return in == null ? null : in.readAllBytes();
    } catch (IOException e) {
      throw new ClassNotFoundException(resource, e);
    }
  }

  @Override
  public String toString() {
    return "retry-agent-okhttp[parent=" + getParent() + "]";
  }
}
