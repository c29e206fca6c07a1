package dev.retryagent.it.differential;

import java.io.PrintStream;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Pattern;

/**
 * The application of the differential suite, run in a forked JVM with and without the agent: it
 * makes the calls of a plan through one {@link Driver} and prints what it observed. It has no retry
 * code and refers to nothing of the agent.
 *
 * <p>Arguments: {@code DRIVER_CLASS PLAN_FILE LANES LINGER_MILLIS}. Each plan line is {@code
 * KEY<TAB>URL<TAB>ACTION} with {@code KEY = caseId/api} ({@link Action#encode()}); lines whose case
 * id starts with {@code warmup} run first, one after the other; the others run {@code LANES} at a
 * time. Each call starts on its own thread {@code app-caller}, whose context class loader is an
 * application loader ({@code app}), as a web container's threads have. It prints, as each call
 * ends, {@code KEY.outcome=}, {@code KEY.thread=} (the raw thread name), {@code KEY.millis=} and
 * {@code KEY.more=} (any further report); then it waits {@code LINGER_MILLIS} so that late requests
 * still reach their servers, and prints {@code KEY.log=} (what java.util.logging and the uncaught
 * exception handler got that names the call's server port), and {@code thread.start=} / {@code
 * thread.end=} lines ({@code name|daemon|loader}) for the threads alive before the first call and
 * at the end. Last line: {@code done=true}; then it exits (OkHttp's threads would keep it up).
 */
public final class DiffApp {
  /** The context class loader of the application's threads: not the system loader. */
  static final ClassLoader APP_LOADER =
      new URLClassLoader("app", new URL[0], ClassLoader.getSystemClassLoader());

  private static final PrintStream OUT = System.out;
  private static final List<String> LOG = new ArrayList<>();

  private DiffApp() {}

  /** One line of the plan. */
  record Item(String key, String api, URI url, Action action) {
    static Item parse(String line) {
      String[] f = line.split("\t", 3);
      return new Item(
          f[0], f[0].substring(f[0].indexOf('/') + 1), URI.create(f[1]), Action.decode(f[2]));
    }

    boolean warmup() {
      return key.startsWith("warmup");
    }
  }

  public static void main(String[] args) throws Exception {
    threads("thread.start");
    captureLogs();
    Driver driver = (Driver) Class.forName(args[0]).getDeclaredConstructor().newInstance();
    List<Item> items = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of(args[1]), StandardCharsets.UTF_8)) {
      items.add(Item.parse(line));
    }
    for (Item item : items) {
      if (item.warmup()) {
        print(item, Call.run(driver, item));
      }
    }
    ExecutorService lanes = Executors.newFixedThreadPool(Integer.parseInt(args[2]));
    for (Item item : items) {
      if (!item.warmup()) {
        lanes.execute(() -> print(item, Call.run(driver, item)));
      }
    }
    lanes.shutdown();
    lanes.awaitTermination(10, TimeUnit.MINUTES);
    Thread.sleep(Long.parseLong(args[3]));
    for (Item item : items) {
      OUT.println(item.key() + ".log=" + logFor(item.url().getPort()));
    }
    threads("thread.end");
    OUT.println("done=true");
    OUT.flush();
    System.exit(0);
  }

  private static void print(Item item, Call.Seen seen) {
    synchronized (OUT) {
      OUT.println(item.key() + ".outcome=" + seen.outcome());
      OUT.println(item.key() + ".thread=" + seen.thread());
      OUT.println(item.key() + ".millis=" + seen.millis());
      OUT.println(item.key() + ".more=" + seen.more());
      OUT.println(item.key() + ".suppressed=" + seen.suppressed());
      OUT.println(item.key() + ".followup=" + seen.followUp());
      OUT.flush();
    }
  }

  /** Everything logged through java.util.logging, and every uncaught exception, as lines. */
  private static void captureLogs() {
    Logger.getLogger("")
        .addHandler(
            new Handler() {
              @Override
              public void publish(LogRecord r) {
                String text = r.getLevel() + " " + r.getLoggerName() + ": " + r.getMessage();
                if (r.getThrown() != null) {
                  text += " (" + Delivery.describe(r.getThrown()) + ")";
                }
                synchronized (LOG) {
                  LOG.add(text.replaceAll("\\R", " "));
                }
              }

              @Override
              public void flush() {}

              @Override
              public void close() {}
            });
    Thread.setDefaultUncaughtExceptionHandler(
        (t, e) -> {
          synchronized (LOG) {
            LOG.add("uncaught in " + ThreadKinds.kind(t.getName()) + ": " + Delivery.describe(e));
          }
        });
  }

  private static String logFor(int port) {
    Pattern mine = Pattern.compile(":" + port + "(?!\\d)");
    List<String> lines = new ArrayList<>();
    synchronized (LOG) {
      for (String line : LOG) {
        if (mine.matcher(line).find()) {
          lines.add(line);
        }
      }
    }
    return String.join(" | ", lines);
  }

  private static void threads(String key) {
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      OUT.println(key + "=" + t.getName() + "|" + t.isDaemon() + "|" + loader(t));
    }
  }

  private static String loader(Thread t) {
    ClassLoader l = t.getContextClassLoader();
    if (l == null) {
      return "null";
    } else if (l == ClassLoader.getSystemClassLoader()) {
      return "system";
    } else if (l == ClassLoader.getPlatformClassLoader()) {
      return "platform";
    } else if (l == APP_LOADER) {
      return "app";
    }
    return l.getClass().getName();
  }
}
