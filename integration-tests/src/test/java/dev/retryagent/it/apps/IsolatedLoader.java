package dev.retryagent.it.apps;

import java.net.URL;
import java.net.URLClassLoader;

/**
 * A class loader shaped like an OSGi bundle's or a JBoss module's: {@code java.*} comes from the
 * bootstrap loader, everything else from its own URLs, and the agent's packages are refused (OSGi
 * hides them unless {@code org.osgi.framework.bootdelegation} names them). The application's class
 * path is not its parent.
 */
final class IsolatedLoader extends URLClassLoader {
  static {
    registerAsParallelCapable();
  }

  IsolatedLoader(URL[] urls) {
    super(urls, null);
  }

  @Override
  protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
    if (name.startsWith("dev.retryagent.") && !name.startsWith("dev.retryagent.it.")) {
      throw new ClassNotFoundException(name + " is not delegated here");
    }
    return super.loadClass(name, resolve);
  }
}
