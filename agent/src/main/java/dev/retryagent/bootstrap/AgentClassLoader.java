package dev.retryagent.bootstrap;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.security.cert.Certificate;
import java.util.Collections;
import java.util.Enumeration;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Loads the agent's hidden classes: entries {@code inst/<binary name>.classdata} of the agent jar,
 * which no other class loader recognises as classes (the OpenTelemetry agent's layout). Resources
 * are read from {@code inst/<name>}.
 *
 * <p>The parent is the platform class loader, so agent code links to {@code java.net.http} and the
 * other platform modules, to {@code java.base}, and to the bootstrap bridge, but never to an
 * application class: the application's own Byte Buddy, SnakeYAML or SLF4J are invisible here, and
 * ours are invisible to it.
 */
final class AgentClassLoader extends ClassLoader {
  static {
    registerAsParallelCapable();
  }

  private static final String PREFIX = "inst/";

  private final JarFile jar;
  private final URL jarUrl;
  private final ProtectionDomain domain;

  private AgentClassLoader(JarFile jar, URL jarUrl) {
    super("retry-agent", ClassLoader.getPlatformClassLoader());
    this.jar = jar;
    this.jarUrl = jarUrl;
    this.domain =
        new ProtectionDomain(new CodeSource(jarUrl, (Certificate[]) null), null, this, null);
  }

  static AgentClassLoader open(String jarPath) throws IOException {
    JarFile jar = new JarFile(jarPath, false);
    return new AgentClassLoader(jar, new java.io.File(jarPath).toURI().toURL());
  }

  @Override
  protected Class<?> findClass(String name) throws ClassNotFoundException {
    JarEntry entry = jar.getJarEntry(PREFIX + name.replace('.', '/') + ".classdata");
    if (entry == null) {
      throw new ClassNotFoundException(name);
    }
    byte[] bytes;
    try (InputStream in = jar.getInputStream(entry)) {
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw new ClassNotFoundException(name, e);
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
