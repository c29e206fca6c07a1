package dev.retryagent.agent.tooling;

/**
 * A class loader in one line of the agent's messages. A loader's own {@code toString()} may span
 * lines (Tomcat's lists its repositories and parent), hold anything, or fail; this names it by its
 * class, its {@code getName()} when set, and its identity hash, with control characters replaced
 * and the length bounded.
 */
public final class LoaderNames {
  /** A name longer than this is cut: a message stays one readable line. */
  static final int MAX_NAME = 120;

  private LoaderNames() {}

  /** {@code com.example.Loader[name]@1b2c3d}, or {@code the bootstrap loader} for null. */
  public static String describe(ClassLoader loader) {
    if (loader == null) {
      return "the bootstrap loader";
    }
    StringBuilder b = new StringBuilder();
    append(b, loader.getClass().getName());
    String name;
    try {
      name = loader.getName(); // not final: a loader's own may fail, inside a transformer here
    } catch (RuntimeException | LinkageError e) {
      name = null;
    }
    if (name != null && !name.isEmpty()) {
      b.append('[');
      append(b, name);
      b.append(']');
    }
    return b.append('@').append(Integer.toHexString(System.identityHashCode(loader))).toString();
  }

  private static void append(StringBuilder b, String text) {
    int n = Math.min(text.length(), MAX_NAME);
    for (int i = 0; i < n; i++) {
      char c = text.charAt(i);
      b.append(Character.isISOControl(c) || Character.getType(c) == Character.FORMAT ? '?' : c);
    }
    if (text.length() > MAX_NAME) {
      b.append("...");
    }
  }
}
