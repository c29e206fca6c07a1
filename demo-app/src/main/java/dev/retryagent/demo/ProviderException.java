package dev.retryagent.demo;

/** The LLM provider or the payment gateway answered with a status that is not 2xx. */
final class ProviderException extends Exception {
  private static final long serialVersionUID = 1L;

  private final int status;

  ProviderException(String operation, int status, String detail) {
    super(operation + ": HTTP " + status + (detail.isEmpty() ? "" : " " + detail));
    this.status = status;
  }

  int status() {
    return status;
  }
}
