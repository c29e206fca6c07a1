package dev.retryagent.internal.observe;

import java.util.function.Consumer;

/** Where lines go by default. */
public final class Sinks {
  private Sinks() {}

  /**
   * Prints each line to the {@link System#err} of the moment (an application that redirects it is
   * followed); never to {@link System#out}, which belongs to the application.
   */
  public static Consumer<String> stderr() {
    return STDERR;
  }

  // A class, not a lambda: the agent's premain uses it, and a lambda spins a class at run time.
  private static final Consumer<String> STDERR =
      new Consumer<String>() {
        @Override
        public void accept(String line) {
          System.err.println(line);
        }
      };
}
