package dev.retryagent.agent.tooling;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;

/**
 * For tests of rewritten classes: defines the classes it is given (binary name to class file)
 * itself, child-first, and takes everything else from its parent. A class it defines is verified by
 * the JVM when it is linked ({@code getDeclaredMethods()} links without initialising).
 */
public class DefiningLoader extends ClassLoader {
  private final Map<String, byte[]> classes;

  public DefiningLoader(ClassLoader parent, Map<String, byte[]> classes) {
    super(parent);
    this.classes = classes; // read as it is when a class is asked for
  }

  /** The class file of {@code c}, as its own loader has it. */
  public static byte[] bytesOf(Class<?> c) {
    String resource = c.getName().replace('.', '/') + ".class";
    try (InputStream in = c.getClassLoader().getResourceAsStream(resource)) {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    byte[] bytes = classes.get(name);
    if (bytes == null) {
      return super.loadClass(name, resolve);
    }
    synchronized (getClassLoadingLock(name)) {
      Class<?> c = findLoadedClass(name);
      return c != null ? c : defineClass(name, bytes, 0, bytes.length);
    }
  }
}
