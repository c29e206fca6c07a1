package dev.retryagent.agent.tooling;

import java.io.IOException;
import java.io.InputStream;
import java.security.ProtectionDomain;

/**
 * Defines an instrumentation's library-facing classes (its glue, and core's adapter for that
 * library) next to one copy of the library: its parent is the loader that defined the library, so
 * the library's packages resolve there, whether that is the system loader, a Spring Boot fat jar's
 * loader, a child-first web-app loader or a plain {@code URLClassLoader}. Every other {@code
 * dev.retryagent.*} class, the relocated libraries included, comes from the agent's own loader, so
 * the engine is the one the rest of the agent uses.
 *
 * <p>The bytes are the agent jar's hidden {@code inst/**.classdata} entries (read through the
 * agent's loader), or plain {@code .class} resources when the agent runs unpackaged (tests),
 * optionally rewritten first (the OpenTelemetry glue is relocated onto the names under which the
 * OpenTelemetry agent ships its API).
 */
public final class GlueClassLoader extends ClassLoader {
  static {
    registerAsParallelCapable();
  }

  private final String name;
  private final String[] ownPackages;
  private final ClassLoader agentLoader;
  private final ProtectionDomain domain;
  private final Rewriter rewriter;

  /** Rewrites a glue class's bytes before they are defined. */
  public interface Rewriter {
    byte[] rewrite(byte[] classfile);
  }

  /**
   * @param name the loader's name, e.g. {@code retry-agent-apache}
   * @param libraryLoader the loader that defined the library ({@code null}: the bootstrap loader)
   * @param agentLoader the agent's loader, for its other classes and for the hidden bytes
   * @param ownPackages the package prefixes defined here ({@code dev.retryagent.apache5.}), each
   *     ending with a dot
   */
  public GlueClassLoader(
      String name, ClassLoader libraryLoader, ClassLoader agentLoader, String... ownPackages) {
    this(name, libraryLoader, agentLoader, null, ownPackages);
  }

  /**
   * As {@link #GlueClassLoader(String, ClassLoader, ClassLoader, String...)}, each own class's
   * bytes passed through {@code rewriter} (null: unchanged).
   */
  public GlueClassLoader(
      String name,
      ClassLoader libraryLoader,
      ClassLoader agentLoader,
      Rewriter rewriter,
      String... ownPackages) {
    super(name, libraryLoader);
    this.rewriter = rewriter;
    this.name = name;
    this.ownPackages = ownPackages.clone();
    this.agentLoader = agentLoader;
    this.domain = GlueClassLoader.class.getProtectionDomain();
  }

  private boolean isOwn(String className) {
    for (String p : ownPackages) {
      if (className.startsWith(p)) {
        return true;
      }
    }
    return false;
  }

  @Override
  protected Class<?> loadClass(String className, boolean resolve) throws ClassNotFoundException {
    if (!className.startsWith("dev.retryagent.")) {
      return super.loadClass(className, resolve);
    }
    if (!isOwn(className)) {
      return agentLoader.loadClass(className);
    }
    synchronized (getClassLoadingLock(className)) {
      Class<?> c = findLoadedClass(className);
      if (c == null) {
        c = findClass(className);
      }
      if (resolve) {
        resolveClass(c);
      }
      return c;
    }
  }

  @Override
  protected Class<?> findClass(String className) throws ClassNotFoundException {
    if (!isOwn(className)) {
      throw new ClassNotFoundException(className);
    }
    String path = className.replace('.', '/');
    byte[] bytes = read(path + ".classdata");
    if (bytes == null) {
      bytes = read(path + ".class");
    }
    if (bytes == null) {
      throw new ClassNotFoundException(className);
    }
    if (rewriter != null) {
      bytes = rewriter.rewrite(bytes);
    }
    return defineClass(className, bytes, 0, bytes.length, domain);
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
    return name + "[parent=" + LoaderNames.describe(getParent()) + "]";
  }
}
