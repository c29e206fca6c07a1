package dev.retryagent.fleet;

/**
 * Redis did not answer an acquisition in time, or answered with an error: the caller falls back to
 * its local share. The message is safe to log (no password, no user-info).
 */
final class FleetUnavailableException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Why; decides whether the connection is down or only this call failed. */
  enum Kind {
    /** Refused, reset or closed: the connection is down. */
    UNREACHABLE(true),
    /** No answer within the command (or connect) timeout: the connection is down. */
    TIMEOUT(true),
    /** Wrong password or user, or a password Redis does not expect: down until fixed. */
    AUTH(true),
    /** Every connection busy for a whole command timeout: this call only. */
    BUSY(false),
    /**
     * Redis answered with an error (a script error, a wrong type under our key): this call only.
     */
    ERROR(false),
    /**
     * Redis answered, but refuses the fleet's scripts whatever their keys: a renamed or disabled
     * {@code EVALSHA}, a cluster's redirect, out of memory, writes stopped. This call fails as for
     * {@link #ERROR} (one round trip, then the local share; no reconnect would help), but no route
     * is shared while it lasts, and the fleet says so ({@link FleetConnection#isShared()}).
     */
    REFUSED(false);

    final boolean connectionDown;

    Kind(boolean connectionDown) {
      this.connectionDown = connectionDown;
    }
  }

  private final Kind kind;

  FleetUnavailableException(Kind kind, String safeMessage) {
    super(safeMessage, null, false, false);
    this.kind = kind;
  }

  Kind kind() {
    return kind;
  }
}
