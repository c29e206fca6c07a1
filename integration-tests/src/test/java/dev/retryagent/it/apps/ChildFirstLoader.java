package dev.retryagent.it.apps;

import java.net.URL;
import java.net.URLClassLoader;

/**
 * A child-first class loader, as web containers use: it defines every class its URLs hold itself,
 * even when the parent (here the application's loader, which has another OkHttp) has one of the
 * same name; only {@code java.*} and what its URLs lack come from the parent.
 */
final class ChildFirstLoader extends URLClassLoader {
  static {
    registerAsParallelCapable();
  }

  ChildFirstLoader(URL[] urls, ClassLoader parent) {
    super(urls, parent);
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    synchronized (getClassLoadingLock(name)) {
      Class<?> c = findLoadedClass(name);
      if (c == null && !name.startsWith("java.")) {
        try {
          c = findClass(name);
        } catch (ClassNotFoundException notHere) {
          // the parent's, then
        }
      }
      if (c == null) {
        c = super.loadClass(name, false);
      }
      if (resolve) {
        resolveClass(c);
      }
      return c;
    }
  }
}
