package dev.retryagent.launcher;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.security.AllPermission;
import java.security.CodeSource;
import java.security.Permissions;
import java.security.ProtectionDomain;
import java.security.cert.Certificate;
import java.util.Collections;
import java.util.Enumeration;
import java.util.jar.JarFile;

/**
 * Loads the agent's hidden classes: the jar's {@link ClassPack} (one entry, which no other class
 * loader recognises as classes, as the OpenTelemetry agent hides its classes as {@code
 * inst/**.classdata}). Resources are read from {@code inst/<name>}; a hidden class file's bytes as
 * the resource {@code <path>.classdata}.
 *
 * <p>The parent is the platform class loader, so agent code links to {@code java.net.http} and the
 * other platform modules, to {@code java.base} (the bridge {@code java.lang.RetryAgentBridge}
 * included), but never to an application class: the application's own Byte Buddy, SnakeYAML or
 * SLF4J are invisible here, and ours are invisible to it. The two start-up types the installer
 * links to, {@link AgentInstaller} and {@link AgentStarter}, are the exception: they live in the
 * system class loader with the launcher (which the platform loader does not see), and this loader
 * hands out exactly those two classes. Making the system loader the parent instead would expose the
 * application's libraries again.
 */
final class AgentClassLoader extends ClassLoader {
  static {
    registerAsParallelCapable();
  }

  private static final String PREFIX = "inst/";

  private static final String CLASSDATA = ".classdata";

  /** The agent's own namespace: every class under it is in the pack, none in a parent. */
  private static final String OWN = "dev.retryagent.";

  private final JarFile jar;
  private final ClassPack classes;
  private final URL jarUrl;
  private final ProtectionDomain domain;

  private AgentClassLoader(JarFile jar, ClassPack classes, URL jarUrl) {
    super("retry-agent", ClassLoader.getPlatformClassLoader());
    this.jar = jar;
    this.classes = classes;
    this.jarUrl = jarUrl;
    this.domain =
        new ProtectionDomain(new CodeSource(jarUrl, (Certificate[]) null), allPermission());
  }

  /**
   * The agent's classes hold every permission, whatever a security policy says, as the JDK's own
   * classes do: they run inside the application's calls (the hooked {@code send} calls on through
   * them), and under a {@code SecurityManager} the JDK checks a permission such as {@code
   * URLPermission} against every frame on the stack, so a frame of ours without it would fail a
   * call the application itself may make (a policy that grants the application's code only, as a
   * legacy application's does). The application's own frames still limit what its calls may do.
   * Static permissions: the policy is never asked about our classes (it could not name the jar's
   * hidden classes apart from the launcher's anyway).
   */
  private static Permissions allPermission() {
    Permissions all = new Permissions();
    all.add(new AllPermission());
    all.setReadOnly();
    return all;
  }

  static AgentClassLoader open(String jarPath) throws IOException {
    JarFile jar = new JarFile(jarPath, false);
    ClassPack classes = ClassPack.open(jar);
    if (classes == null) {
      throw new IOException(jarPath + " has no " + ClassPack.ENTRY + ": not a retry-agent jar");
    }
    return new AgentClassLoader(jar, classes, new java.io.File(jarPath).toURI().toURL());
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    // the installer implements one and registers with the other: the very classes the launcher
    // uses, from the system class loader, or the installer could not be handed over
    if (name.equals(AgentInstaller.class.getName())) {
      return AgentInstaller.class;
    }
    if (name.equals(AgentStarter.class.getName())) {
      return AgentStarter.class;
    }
    if (name.startsWith(OWN)) {
      // Ours (relocated libraries included) are only in the pack: asking the platform loader
      // first, and it the boot loader, costs a lock, a lookup and a map entry in each per class,
      // run interpreted before main (~70-230 classes there).
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
    return super.loadClass(name, resolve);
  }

  @Override
  protected Class<?> findClass(String name) throws ClassNotFoundException {
    byte[] bytes;
    try {
      bytes = classes.read(name.replace('.', '/'));
    } catch (IOException e) {
      throw new ClassNotFoundException(name, e);
    }
    if (bytes == null) {
      throw new ClassNotFoundException(name);
    }
    definePackageOf(name);
    return defineClass(name, bytes, 0, bytes.length, domain);
  }

  private void definePackageOf(String className) {
    int dot = className.lastIndexOf('.');
    if (dot > 0) {
      String pkg = className.substring(0, dot);
      if (getDefinedPackage(pkg) == null) {
        try {
          definePackage(pkg, null, null, null, null, null, null, null);
        } catch (IllegalArgumentException raced) {
          // another thread defined it first
        }
      }
    }
  }

  /**
   * A hidden class file's bytes ({@code <path>.classdata}: the glue defined next to each client
   * copy, the bridge's bytes), from the pack; only this way, never as a {@code URL}. Other
   * resources as {@link ClassLoader} reads them.
   */
  @Override
  public InputStream getResourceAsStream(String name) {
    if (name.endsWith(CLASSDATA)) {
      try {
        byte[] bytes = classes.read(name.substring(0, name.length() - CLASSDATA.length()));
        return bytes == null ? null : new ByteArrayInputStream(bytes);
      } catch (IOException e) {
        return null;
      }
    }
    return super.getResourceAsStream(name);
  }

  @Override
  protected URL findResource(String name) {
    if (jar.getJarEntry(PREFIX + name) == null) {
      return null;
    }
    try {
      return new URL("jar:" + jarUrl + "!/" + PREFIX + name);
    } catch (MalformedURLException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected Enumeration<URL> findResources(String name) {
    URL url = findResource(name);
    return url == null
        ? Collections.emptyEnumeration()
        : Collections.enumeration(Collections.singleton(url));
  }
}
