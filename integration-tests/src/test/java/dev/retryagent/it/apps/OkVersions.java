package dev.retryagent.it.apps;

import java.util.ArrayList;
import java.util.List;
import okhttp3.Interceptor;
import okhttp3.OkHttpClient;

/** What OkHttp an application runs on, and what its clients hold. */
final class OkVersions {
  private OkVersions() {}

  /** The OkHttp version, from the jar that holds {@code OkHttpClient}. */
  static String version() {
    return version(OkHttpClient.class);
  }

  static String version(Class<?> okHttpClass) {
    String jar = okHttpClass.getProtectionDomain().getCodeSource().getLocation().getPath();
    String file = jar.substring(jar.lastIndexOf('/') + 1);
    return file.replaceAll("^okhttp(-jvm)?-", "").replaceAll("\\.jar$", "");
  }

  /** The class names of the client's application interceptors, comma-separated. */
  static String interceptorNames(OkHttpClient client) {
    List<String> names = new ArrayList<>();
    for (Interceptor i : client.interceptors()) {
      names.add(i.getClass().getName());
    }
    return String.join(",", names);
  }
}
