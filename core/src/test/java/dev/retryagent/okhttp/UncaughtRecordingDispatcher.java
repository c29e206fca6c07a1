package dev.retryagent.okhttp;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import okhttp3.Dispatcher;

/**
 * A dispatcher whose threads record what leaves them (their uncaught-exception handler), where
 * OkHttp lets a callback's {@code RuntimeException} go. Daemon threads; {@link #close} shuts them
 * down.
 */
final class UncaughtRecordingDispatcher implements AutoCloseable {
  final List<Throwable> uncaught = new CopyOnWriteArrayList<>();
  private final ExecutorService executor =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "OkHttp test dispatcher");
            t.setDaemon(true);
            t.setUncaughtExceptionHandler((thread, e) -> uncaught.add(e));
            return t;
          });
  final Dispatcher dispatcher = new Dispatcher(executor);

  @Override
  public void close() {
    executor.shutdown();
  }
}
