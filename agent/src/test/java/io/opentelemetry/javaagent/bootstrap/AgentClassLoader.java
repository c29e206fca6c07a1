package io.opentelemetry.javaagent.bootstrap;

import java.net.URL;
import java.net.URLClassLoader;

/** A stand-in named like the OpenTelemetry agent's class loader. */
public final class AgentClassLoader extends URLClassLoader {
  public AgentClassLoader() {
    super(new URL[0], ClassLoader.getPlatformClassLoader());
  }
}
