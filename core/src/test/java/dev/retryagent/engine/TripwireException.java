package dev.retryagent.engine;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An exception class whose initialisation is recorded: named in a YAML file, it must never be
 * loaded or run, only compared by name ({@code ExceptionNamesTest}).
 */
final class TripwireException extends IOException {
  private static final long serialVersionUID = 1L;

  static {
    Tripwire.TRIPPED.set(true);
  }

  /** Holds the flag apart, so reading it does not initialise the exception class. */
  static final class Tripwire {
    static final AtomicBoolean TRIPPED = new AtomicBoolean();

    private Tripwire() {}
  }
}
