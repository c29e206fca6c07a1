package dev.retryagent.engine;

import java.net.URL;
import java.net.URLClassLoader;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Defines the agent's own classes ({@code dev.retryagent.*}) itself, from the build's class
 * directories, and records the name of every class asked of it: whatever the agent's code looks up,
 * by {@code Class.forName} or a class loader, with or without initialising it, reaches {@link
 * #loadClass(String, boolean)} here ({@code ExceptionNamesTest}).
 */
final class RecordingClassLoader extends URLClassLoader {
  private final Set<String> asked = ConcurrentHashMap.newKeySet();

  RecordingClassLoader(URL... classDirectories) {
    super(classDirectories, RecordingClassLoader.class.getClassLoader());
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    asked.add(name);
    if (!name.startsWith("dev.retryagent.")) {
      return super.loadClass(name, resolve);
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

  /** The names asked so far. */
  Set<String> asked() {
    return Set.copyOf(asked);
  }
}
