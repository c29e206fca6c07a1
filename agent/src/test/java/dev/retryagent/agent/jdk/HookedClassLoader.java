package dev.retryagent.agent.jdk;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/** Defines one class from instrumented bytes, child-first; everything else from its parent. */
final class HookedClassLoader extends ClassLoader {
  private final String name;
  private final byte[] bytes;

  HookedClassLoader(Class<?> original, byte[] bytes) {
    super(original.getClassLoader());
    this.name = original.getName();
    this.bytes = bytes;
  }

  static byte[] bytesOf(Class<?> c) {
    String resource = c.getName().replace('.', '/') + ".class";
    try (InputStream in = c.getClassLoader().getResourceAsStream(resource)) {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected Class<?> loadClass(String className, boolean resolve) throws ClassNotFoundException {
    if (!className.equals(name)) {
      return super.loadClass(className, resolve);
    }
    synchronized (getClassLoadingLock(className)) {
      Class<?> c = findLoadedClass(className);
      if (c == null) {
        c = defineClass(className, bytes, 0, bytes.length);
      }
      return c;
    }
  }
}
