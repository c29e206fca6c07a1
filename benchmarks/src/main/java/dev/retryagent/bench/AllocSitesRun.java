package dev.retryagent.bench;

import com.sun.management.HotSpotDiagnosticMXBean;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.RetryInterceptor;
import dev.retryagent.policy.Policy;
import java.lang.management.ManagementFactory;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;
import okhttp3.OkHttpClient;
import okhttp3.Request;

/**
 * Where the bytes of one loopback GET go, object by object: every allocation of every thread of the
 * process, with its stack, for the plain clients and the ones wired by hand ({@link
 * RetryingHttpClient#wrap}, {@link RetryInterceptor}), and the difference site by site. Unlike the
 * totals of {@link LoopbackAllocRun} this tells the decorator's own objects apart from the plain
 * client's run-to-run spread (the JDK client's own allocation varies by ±300 B per call between
 * runs): a site the decorator adds shows up as a whole number of objects per call, a site that
 * wobbles shows up in the plain-against-plain ("A/A") difference as well.
 *
 * <p>Exact counts, not samples: run with {@code -XX:+UseG1GC -XX:-UseTLAB}, so that every object is
 * allocated outside a thread-local buffer and JFR records a {@code jdk.ObjectAllocationOutsideTLAB}
 * event with its stack for each (G1 has no inline allocation without TLABs; the JIT's escape
 * analysis still removes what it removes, as in production). The run checks the flags and that
 * JFR's bytes match the threads' allocated-bytes counters.
 *
 * <p>Run (from the repository root, after {@code mvn -B -ntp -pl core,benchmarks -am package
 * -DskipTests}):
 *
 * <pre>
 * java -XX:+UseG1GC -XX:-UseTLAB -cp benchmarks/target/benchmarks.jar \
 *     dev.retryagent.bench.AllocSitesRun [okhttp|jdk|both|apache [blocks [calls per block [warm-up calls]]]]
 * </pre>
 *
 * Defaults: both (java.net.http and OkHttp; {@code apache} is Apache HttpClient 4.5, 5.x classic
 * and 5.x async instead, see {@link ApacheCalls}), 6 blocks of 500 calls per variant, 20,000
 * warm-up calls per variant. Variants run interleaved block by block: plain, decorated, plain
 * again.
 *
 * <p>Through the agent, which hooks every client of its JVM, so that the plain client is compared
 * across two runs instead: {@code save} records one client as the JVM builds it (with or without
 * {@code -javaagent}, built-in defaults), {@code compare} diffs two such records site by site (a
 * steady site makes the same objects per call in every run of the same code):
 *
 * <pre>
 * java -XX:+UseG1GC -XX:-UseTLAB -cp benchmarks/target/benchmarks.jar  *     dev.retryagent.bench.AllocSitesRun save okhttp plain.bin [blocks [calls [warm-up]]]
 * java -XX:+UseG1GC -XX:-UseTLAB -javaagent:agent/target/retry-agent.jar  *     -cp benchmarks/target/benchmarks.jar  *     dev.retryagent.bench.AllocSitesRun save okhttp agent.bin [blocks [calls [warm-up]]]
 * java -cp benchmarks/target/benchmarks.jar dev.retryagent.bench.AllocSitesRun  *     compare plain.bin agent.bin
 * </pre>
 */
public final class AllocSitesRun {
  private AllocSitesRun() {}

  private static final String ALLOCATION = "jdk.ObjectAllocationOutsideTLAB";

  /** This package: the benchmark's own code, not the decorators'. */
  private static final String BENCH = "dev.retryagent.bench.";

  /** Frames of a site's stack shown in the report. */
  private static final int SHOWN_FRAMES = 8;

  /** One way of making the call. */
  @FunctionalInterface
  private interface Call {
    Object make() throws Exception;
  }

  /** Counts and bytes of one variant, summed over its blocks, by site and by stack. */
  private static final class Tally implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    final Map<String, long[]> bySite = new HashMap<>();
    final Map<String, long[]> countsByBlock = new HashMap<>(); // site: objects in each block
    final Map<String, String> stackOfSite = new HashMap<>();
    final List<double[]> blocks =
        new ArrayList<>(); // {JFR bytes/call, thread counters' bytes/call}
    long calls;
    String label; // what was measured (save and compare)
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("save")) {
      save(args);
      return;
    }
    if (args.length > 0 && args[0].equals("compare")) {
      compare(Path.of(args[1]), Path.of(args[2]));
      return;
    }
    String which = args.length > 0 ? args[0] : "both";
    int blocks = intArg(args, 1, 6);
    int perBlock = intArg(args, 2, 500);
    int warmUp = intArg(args, 3, 20_000);
    requireExactCounts();
    ApacheCalls apache = null;
    try (LoopbackServer server = LoopbackServer.okWithProbe()) {
      HttpClient jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      OkHttpClient ok = new OkHttpClient();
      if (LoopbackCallBenchmark.jdkProbe(server, jdk, "sites") == 200) {
        throw new IllegalStateException("run without -javaagent: this compares the decorators");
      }
      RetryEngine engine = RetryEngine.builder().policy(Policy.defaults()).build();
      HttpClient jdkWrapped = RetryingHttpClient.wrap(jdk, engine);
      OkHttpClient okWrapped = ok.newBuilder().addInterceptor(new RetryInterceptor(engine)).build();
      LoopbackCallBenchmark.expectStatus(
          200, LoopbackCallBenchmark.jdkProbe(server, jdkWrapped, "sites"), "wrap");
      LoopbackCallBenchmark.expectStatus(
          200, LoopbackCallBenchmark.okProbe(server, okWrapped, "sites"), "RetryInterceptor");
      HttpRequest jdkGet = LoopbackCallBenchmark.jdkRequest(server.url("/v1/items"));
      Request okGet = new Request.Builder().url(server.url("/v1/items")).build();
      Map<String, Call> variants = new LinkedHashMap<>();
      if (which.equals("apache")) {
        Map<String, java.util.concurrent.Callable<Object>> calls = new LinkedHashMap<>();
        apache = new ApacheCalls(server, engine);
        apache.addTo(calls, true);
        calls.forEach((name, c) -> variants.put(name, c::call));
      } else if (!which.equals("okhttp")) {
        variants.put("jdk, plain", () -> LoopbackCallBenchmark.jdk(jdk, jdkGet));
        variants.put("jdk, wrap", () -> LoopbackCallBenchmark.jdk(jdkWrapped, jdkGet));
        variants.put("jdk, plain again", () -> LoopbackCallBenchmark.jdk(jdk, jdkGet));
      }
      if (!which.equals("jdk") && !which.equals("apache")) {
        variants.put("okhttp, plain", () -> LoopbackCallBenchmark.ok(ok, okGet));
        variants.put("okhttp, RetryInterceptor", () -> LoopbackCallBenchmark.ok(okWrapped, okGet));
        variants.put("okhttp, plain again", () -> LoopbackCallBenchmark.ok(ok, okGet));
      }
      Map<String, Tally> tallies = measure(variants, blocks, perBlock, warmUp);
      report(blocks, perBlock, tallies);
      ok.dispatcher().executorService().shutdown();
    } finally {
      if (apache != null) {
        apache.close();
      }
    }
  }

  /** {@code save CLIENT FILE [blocks [calls [warm-up]]]}: one client as this JVM builds it. */
  private static void save(String[] args) throws Exception {
    String client = args[1];
    Path out = Path.of(args[2]);
    int blocks = intArg(args, 3, 6);
    int perBlock = intArg(args, 4, 500);
    int warmUp = intArg(args, 5, 20_000);
    requireExactCounts();
    try (LoopbackServer server = LoopbackServer.okWithProbe()) {
      HttpClient jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      OkHttpClient ok = new OkHttpClient();
      // The probe answers 503 then 200: a 200 means something retried it, the agent.
      boolean agent = LoopbackCallBenchmark.jdkProbe(server, jdk, "sites") == 200;
      Call call;
      if (client.equals("jdk")) {
        HttpRequest get = LoopbackCallBenchmark.jdkRequest(server.url("/v1/items"));
        call = () -> LoopbackCallBenchmark.jdk(jdk, get);
      } else if (client.equals("okhttp")) {
        Request get = new Request.Builder().url(server.url("/v1/items")).build();
        call = () -> LoopbackCallBenchmark.ok(ok, get);
      } else {
        throw new IllegalArgumentException("save jdk|okhttp FILE: not " + client);
      }
      Tally t = measure(Map.of(client, call), blocks, perBlock, warmUp).get(client);
      t.label = client + (agent ? ", with the agent" : ", without an agent");
      try (java.io.ObjectOutputStream o =
          new java.io.ObjectOutputStream(Files.newOutputStream(out))) {
        o.writeObject(t);
      }
      report(blocks, perBlock, Map.of(t.label, t));
      System.out.println("saved " + t.label + " to " + out);
      ok.dispatcher().executorService().shutdown();
    }
  }

  /**
   * Warms every variant up with {@code warmUp} calls, then records {@code blocks} blocks of {@code
   * perBlock} calls of each, interleaved block by block.
   */
  private static Map<String, Tally> measure(
      Map<String, Call> variants, int blocks, int perBlock, int warmUp) throws Exception {
    for (Call c : variants.values()) {
      for (int i = 0; i < warmUp; i++) {
        c.make();
      }
    }
    Map<String, Tally> tallies = new LinkedHashMap<>();
    Path file = Files.createTempFile("alloc-sites", ".jfr");
    try {
      for (int block = 0; block < blocks; block++) {
        for (Map.Entry<String, Call> v : variants.entrySet()) {
          Tally t = tallies.computeIfAbsent(v.getKey(), k -> new Tally());
          record(v.getValue(), perBlock, blocks, file, t);
        }
      }
    } finally {
      Files.deleteIfExists(file);
    }
    return tallies;
  }

  /** {@code compare BASE OTHER}: what OTHER's calls allocate beyond BASE's, site by site. */
  private static void compare(Path base, Path other) throws Exception {
    Tally b = load(base);
    Tally o = load(other);
    diff(o.label, o, b.label, b);
  }

  private static Tally load(Path file) throws Exception {
    try (java.io.ObjectInputStream in = new java.io.ObjectInputStream(Files.newInputStream(file))) {
      return (Tally) in.readObject();
    }
  }

  /** Argument {@code i}, or {@code fallback} when there are fewer. */
  private static int intArg(String[] args, int i, int fallback) {
    return args.length > i ? Integer.parseInt(args[i]) : fallback;
  }

  private static void requireExactCounts() {
    HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
    if (!"false".equals(hs.getVMOption("UseTLAB").getValue())
        || !"true".equals(hs.getVMOption("UseG1GC").getValue())) {
      throw new IllegalStateException(
          "run with -XX:+UseG1GC -XX:-UseTLAB: otherwise JFR sees only some allocations");
    }
  }

  /** One block of {@code calls} calls, every allocation recorded, added to {@code tally}. */
  private static void record(Call call, int calls, int blocks, Path file, Tally tally)
      throws Exception {
    long before;
    long after;
    try (Recording r = new Recording()) {
      r.enable(ALLOCATION).withStackTrace();
      r.start();
      before = allocatedByAllThreads();
      for (int i = 0; i < calls; i++) {
        call.make();
      }
      after = allocatedByAllThreads();
      r.stop();
      r.dump(file);
    }
    long bytes = 0;
    for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
      RecordedThread thread = e.getThread("eventThread");
      String name = thread == null ? "" : thread.getJavaName();
      if (name != null && name.startsWith("JFR ")) {
        continue; // the recorder's own work
      }
      long size = e.getLong("allocationSize");
      bytes += size;
      String site = site(e);
      long[] cb = tally.bySite.computeIfAbsent(site, k -> new long[2]);
      cb[0]++;
      cb[1] += size;
      tally.countsByBlock.computeIfAbsent(site, k -> new long[blocks])[tally.blocks.size()]++;
      tally.stackOfSite.putIfAbsent(site, stack(e.getStackTrace()));
    }
    tally.calls += calls;
    tally.blocks.add(new double[] {bytes / (double) calls, (after - before) / (double) calls});
  }

  /**
   * The object's class and the first frame outside the JDK's and Kotlin's general-purpose packages
   * ({@code java.*}, {@code jdk.internal.misc}, {@code kotlin.*}): the code that asked for it. Not
   * the top frame, which depends on what the JIT made an intrinsic or inlined ({@code
   * Arrays.copyOf} against {@code Array.newInstance}); nor the whole stack, which the decorator's
   * frames change for everything below it.
   */
  private static String site(RecordedEvent e) {
    // A lambda's class is named by its order of creation, which differs between runs (compare).
    String type = e.getClass("objectClass").getName().replaceAll("\\$\\$Lambda.*", "\\$\\$Lambda");
    RecordedStackTrace st = e.getStackTrace();
    if (st == null || st.getFrames().isEmpty()) {
      return type + " @ ?";
    }
    for (RecordedFrame f : st.getFrames()) {
      String owner = f.getMethod().getType().getName();
      if (!owner.startsWith("java.")
          && !owner.startsWith("jdk.internal.misc.")
          && !owner.startsWith("kotlin.")) {
        String ours = owner.startsWith("dev.retryagent.") && !owner.startsWith(BENCH) ? "*" : "";
        return type + " @ " + ours + frame(f);
      }
    }
    return type + " @ " + frame(st.getFrames().get(0));
  }

  private static String stack(RecordedStackTrace st) {
    if (st == null) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    List<RecordedFrame> frames = st.getFrames();
    for (int i = 0; i < Math.min(frames.size(), SHOWN_FRAMES); i++) {
      b.append(i == 0 ? "" : " < ").append(frame(frames.get(i)));
    }
    return b.toString();
  }

  private static String frame(RecordedFrame f) {
    String type = f.getMethod().getType().getName();
    String simple = type.substring(type.lastIndexOf('.') + 1).replaceAll("/0x[0-9a-f]+", "");
    return simple + "." + f.getMethod().getName() + ":" + f.getLineNumber();
  }

  private static long allocatedByAllThreads() {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (long b : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
      sum += Math.max(0, b);
    }
    return sum;
  }

  private static void report(int blocks, int perBlock, Map<String, Tally> tallies) {
    System.out.printf(
        "%d blocks x %d calls per variant, every allocation of every thread (JFR, no TLAB)%n%n",
        blocks, perBlock);
    System.out.println(
        "| variant | B/call (JFR), median (min-max) | B/call (thread counters), median |");
    System.out.println("|---|---:|---:|");
    for (Map.Entry<String, Tally> e : tallies.entrySet()) {
      double[] jfr = e.getValue().blocks.stream().mapToDouble(b -> b[0]).sorted().toArray();
      double[] mx = e.getValue().blocks.stream().mapToDouble(b -> b[1]).sorted().toArray();
      System.out.printf(
          "| %s | %.0f (%.0f-%.0f) | %.0f |%n",
          e.getKey(), jfr[jfr.length / 2], jfr[0], jfr[jfr.length - 1], mx[mx.length / 2]);
    }
    for (String client : new String[] {"jdk", "okhttp", "apache4", "apache5", "apache5-async"}) {
      Tally plain = tallies.get(client + ", plain");
      if (plain == null) {
        continue;
      }
      for (Map.Entry<String, Tally> e : tallies.entrySet()) {
        if (e.getKey().startsWith(client + ",") && e.getValue() != plain) {
          diff(e.getKey(), e.getValue(), client + ", plain", plain);
        }
      }
    }
  }

  /**
   * Site by site, what {@code other} allocates per call beyond {@code plain}, in two sums: sites
   * whose count is steady (the same in every block of both variants, give or take 1% of the calls:
   * what the code makes on every call) and sites whose count varies from block to block (what the
   * JIT's escape analysis removes in some compilations and not in others, and the threads' timing).
   * Rows of at least 2 B/call either way.
   */
  private static void diff(String name, Tally other, String plainName, Tally plain) {
    Set<String> sites = new HashSet<>(plain.bySite.keySet());
    sites.addAll(other.bySite.keySet());
    List<Object[]> rows = new ArrayList<>();
    double steady = 0;
    double varying = 0;
    double varyingOurs = 0;
    for (String s : sites) {
      long[] p = plain.bySite.getOrDefault(s, new long[2]);
      long[] o = other.bySite.getOrDefault(s, new long[2]);
      double bytes = o[1] / (double) other.calls - p[1] / (double) plain.calls;
      boolean isSteady = steady(plain, s) && steady(other, s);
      if (isSteady) {
        steady += bytes;
      } else {
        varying += bytes;
        varyingOurs += s.contains(" @ *") ? bytes : 0;
      }
      if (Math.abs(bytes) >= 2) {
        String stack = other.stackOfSite.getOrDefault(s, plain.stackOfSite.get(s));
        rows.add(
            new Object[] {
              s,
              p[0] / (double) plain.calls,
              o[0] / (double) other.calls,
              bytes,
              isSteady ? "steady" : "varies",
              stack
            });
      }
    }
    rows.sort(Comparator.comparingDouble(r -> -Math.abs((double) r[3])));
    System.out.printf(
        "%n%s minus %s: %+.1f B/call at steady sites, %+.1f at varying sites (%+.1f of it at"
            + " sites in *dev.retryagent), %+.1f in all%n%n",
        name, plainName, steady, varying, varyingOurs, steady + varying);
    System.out.println(
        "| object @ site | objects/call, plain | objects/call, this | B/call | count | stack (top) |");
    System.out.println("|---|---:|---:|---:|---|---|");
    for (Object[] r : rows) {
      String site = (String) r[0];
      String count = (String) r[4];
      if (site.contains(" @ *") && count.equals("varies")) {
        // Ours, and not on every call: which blocks made it (the JIT's doing, block by block).
        count += " " + Arrays.toString(other.countsByBlock.getOrDefault(site, new long[0]));
      }
      System.out.printf(
          "| %s | %.3f | %.3f | %+.1f | %s | %s |%n", site, r[1], r[2], r[3], count, r[5]);
    }
  }

  /**
   * The site's count is the same in every block, give or take 1 B per call (a few small objects in
   * a block; a large buffer must match exactly).
   */
  private static boolean steady(Tally t, String site) {
    long[] counts = t.countsByBlock.get(site);
    if (counts == null) {
      return true; // never made: steadily zero
    }
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (long c : counts) {
      min = Math.min(min, c);
      max = Math.max(max, c);
    }
    long perBlock = t.calls / counts.length;
    long[] countAndBytes = t.bySite.get(site);
    double size = countAndBytes[1] / (double) countAndBytes[0];
    return (max - min) * size <= perBlock;
  }
}
