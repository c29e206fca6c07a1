package org.example.plugins;

import java.net.URL;
import java.net.URLClassLoader;

/**
 * A plugin host's loader that shares its simple name with the OpenTelemetry agent's: the
 * application's own, whose clients are to be hooked.
 */
public final class ExtensionClassLoader extends URLClassLoader {
  public ExtensionClassLoader(ClassLoader parent) {
    super(new URL[0], parent);
  }
}
