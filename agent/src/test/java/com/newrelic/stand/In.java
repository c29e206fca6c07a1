package com.newrelic.stand;

import java.net.URL;
import java.net.URLClassLoader;

/** A loader whose class name says it belongs to another agent. */
public final class In extends URLClassLoader {
  public In() {
    super(new URL[0], ClassLoader.getPlatformClassLoader());
  }
}
