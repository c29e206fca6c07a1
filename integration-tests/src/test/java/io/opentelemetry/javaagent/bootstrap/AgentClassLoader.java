package io.opentelemetry.javaagent.bootstrap;

import java.net.URL;
import java.net.URLClassLoader;

/**
 * A stand-in for the OpenTelemetry agent's class loader (same class name), which holds that agent's
 * private OkHttp for its exporter: the retry agent must leave OkHttp defined here alone. Its parent
 * is the platform loader, so it defines OkHttp (and whatever else its URLs hold) itself.
 */
public final class AgentClassLoader extends URLClassLoader {
  public AgentClassLoader(URL[] urls) {
    super(urls, ClassLoader.getPlatformClassLoader());
  }
}
