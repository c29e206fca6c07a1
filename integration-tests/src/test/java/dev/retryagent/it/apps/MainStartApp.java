package dev.retryagent.it.apps;

/**
 * Marks the moment its {@code main} starts and exits: the first thing {@code main} does is load
 * {@link Started}, so in a class-load log ({@code -Xlog:class+load}) every line before that class's
 * is a class loaded before {@code main}, by the JVM, the launcher or an agent's {@code premain}.
 * Prints {@code started=true}.
 */
public final class MainStartApp {
  private MainStartApp() {}

  public static void main(String[] args) {
    Started.mark();
    System.out.println("started=true");
  }

  /** Loaded by the first statement of {@code main}, and by nothing before it. */
  public static final class Started {
    private Started() {}

    static void mark() {
      // loading this class is the mark
    }
  }
}
