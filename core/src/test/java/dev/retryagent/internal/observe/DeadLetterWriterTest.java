package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DeadLetterWriterTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir Path dir;
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private final List<DeadLetterWriter> writers = new ArrayList<>();

  @AfterEach
  void close() {
    writers.forEach(DeadLetterWriter::close);
  }

  private DeadLetterWriter writer(Path path) {
    DeadLetterWriter w = new DeadLetterWriter(path, errors::add);
    writers.add(w);
    return w;
  }

  /** A writer of 100 lines at most that opens its file with {@code opener}. */
  private DeadLetterWriter opening(Path path, DeadLetterWriter.Opener opener) {
    DeadLetterWriter w = new DeadLetterWriter(path, errors::add, 100, opener);
    writers.add(w);
    return w;
  }

  /** A writer whose every write waits for a permit of {@code disk}: a disk slow at will. */
  private DeadLetterWriter heldUpByTheDisk(Path file, int capacity, Semaphore disk) {
    DeadLetterWriter w = new DeadLetterWriter(file, errors::add, capacity, new HeldOpen(disk));
    writers.add(w);
    return w;
  }

  private static List<String> lines(Path file) throws IOException {
    return Files.readAllLines(file, StandardCharsets.UTF_8);
  }

  @Test
  void theFileItCreatesIsReadableByItsOwnerOnly() throws Exception {
    Path file = dir.resolve("logs/dead.jsonl");
    assumePosix(dir);
    DeadLetterWriter w = writer(file);
    new Rig(Rig.policy("payments"), w).call(FakeRequest.post("pay.example.com", "/v1/c"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);

    assertThat(Files.getPosixFilePermissions(file))
        .containsExactlyInAnyOrder(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
  }

  @Test
  void aFileThatExistsKeepsItsPermissions() throws Exception {
    assumePosix(dir);
    Path file = Files.createFile(dir.resolve("shared.jsonl"));
    Set<PosixFilePermission> chosen = PosixFilePermissions.fromString("rw-r-----");
    Files.setPosixFilePermissions(file, chosen);
    DeadLetterWriter w = writer(file);
    new Rig(Rig.policy("payments"), w).call(FakeRequest.post("pay.example.com", "/v1/c"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);

    assertThat(Files.getPosixFilePermissions(file)).isEqualTo(chosen);
  }

  private static void assumePosix(Path dir) {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "POSIX permissions");
  }

  @Test
  void theWriterThreadIsTheAgentsAndKeepsNoApplicationLoader() throws Exception {
    // issue 11: the writer thread kept the context class loader of the first application thread
    // that gave up (a web application's loader stayed in memory after undeploy).
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);
    ClassLoader application =
        new java.net.URLClassLoader(new java.net.URL[0], getClass().getClassLoader());
    Thread caller =
        new Thread(() -> rig.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503));
    caller.setContextClassLoader(application);
    caller.start();
    caller.join();
    await().atMost(WAIT).until(() -> w.written() == 1);

    Thread writerThread =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().equals("retry-agent-dead-letters"))
            .filter(t -> t.getContextClassLoader() != application)
            .findFirst()
            .orElse(null);
    assertThat(writerThread).as("a writer thread without the application's loader").isNotNull();
    assertThat(writerThread.isDaemon()).isTrue();
    assertThat(writerThread.getContextClassLoader()).isSameAs(ClassLoader.getSystemClassLoader());
    assertThat(
            Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("retry-agent-"))
                .filter(t -> t.getContextClassLoader() == application))
        .isEmpty();
  }

  @Test
  void aGiveUpBecomesOneJsonLineWithEveryField() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);
    w.close();

    assertThat(lines(file)).hasSize(1);
    Map<String, Object> expected = new LinkedHashMap<>();
    expected.put("time", "2023-11-14T22:13:21.000Z");
    expected.put("route", "payments");
    expected.put("method", "POST");
    expected.put("scheme", "https");
    expected.put("host", "pay.example.com");
    expected.put("port", 443L);
    expected.put("path", "/v1/charges");
    expected.put("attempts", 1L);
    expected.put("status", 503L);
    expected.put("outcome", "response");
    expected.put("error", null);
    expected.put("reason", "not-idempotent");
    expected.put("observe", false);
    assertThat(MiniJson.parseObject(lines(file).get(0))).containsExactlyEntriesOf(expected);
  }

  @Test
  void aHostIsWrittenInOneSpellingWhicheverClientGaveItAndHowever() throws IOException {
    // java.net.http gives an IPv6 literal's host as "[::1]", OkHttp as "::1", an application may
    // write "[0:0:0:0:0:0:0:1]" or "Pay.Example.com.": the same host was written several ways. As
    // the metrics and every log line name it (TargetKey.host).
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.of("POST", "http", "::1", 8080, "/pay"), 503);
    rig.call(FakeRequest.of("POST", "http", "[::1]", 8080, "/pay"), 503);
    rig.call(FakeRequest.of("POST", "http", "[0:0:0:0:0:0:0:1]", 8080, "/pay"), 503);
    rig.call(FakeRequest.post("Pay.Example.com.", "/pay"), 503);
    w.close();

    assertThat(lines(file)).hasSize(4);
    assertThat(lines(file))
        .extracting(line -> MiniJson.parseObject(line).get("host"))
        .containsExactly("[::1]", "[::1]", "[::1]", "pay.example.com");
    assertThat(lines(file))
        .extracting(line -> MiniJson.parseObject(line).get("port"))
        .containsExactly(8080L, 8080L, 8080L, 443L);
  }

  @Test
  void aHostLongerThanADnsNameIsCut() throws IOException {
    // As the log lines cut it (Sanitizer.boundedHost) and the metrics count it as "other".
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.post("h".repeat(65_536), "/pay"), 503);
    w.close();

    assertThat(lines(file))
        .extracting(line -> MiniJson.parseObject(line).get("host"))
        .containsExactly("h".repeat(253) + "...");
  }

  @Test
  void aCallTheApplicationsOwnBodyEndedHasThatOutcomeNotCancelled() throws IOException {
    // Its outcome said "cancelled", a cancel nobody made, next to reason application-failed.
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("upload"), w);

    rig.call(FakeRequest.get("h.example", "/v1/upload"), new Rig.Applications(new IOException()));
    w.close();

    assertThat(MiniJson.parseObject(lines(file).get(0)))
        .containsEntry("status", null)
        .containsEntry("outcome", "application-failed")
        .containsEntry("reason", "application-failed");
  }

  @Test
  void aCallWhoseClientHadNoPooledConnectionInTimeIsAPoolTimeoutNotCancelled() throws IOException {
    // Its outcome and reason said "cancelled", a cancel nobody made: Apache HttpClient's pool,
    // held by the application's other calls, had no connection within connectionRequestTimeout.
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("search"), w);

    rig.call(
        FakeRequest.get("h.example", "/v1/q"),
        new org.apache.hc.core5.http.ConnectionRequestTimeoutException("Deadline: overdue"));
    w.close();

    assertThat(MiniJson.parseObject(lines(file).get(0)))
        .containsEntry("status", null)
        .containsEntry("outcome", "pool-timeout")
        .containsEntry("reason", "pool-timeout")
        .containsEntry(
            "error",
            "org.apache.hc.core5.http.ConnectionRequestTimeoutException: Deadline: overdue");
  }

  @Test
  void anExceptionIsNamedAndSanitisedAndTheStatusIsNull() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("llm", b -> b.maxAttempts(2)), w);
    SocketException reset =
        new SocketException("Connection reset by http://h/x?token=SECRET\nAuthorization: SECRET");

    rig.call(FakeRequest.of("GET", "http", "h.example", 8080, "/v1/x"), reset, reset);
    w.close();

    Map<String, Object> json = MiniJson.parseObject(lines(file).get(0));
    assertThat(json)
        .containsEntry("status", null)
        .containsEntry("outcome", "reset")
        .containsEntry("attempts", 2L)
        .containsEntry("port", 8080L)
        .containsEntry("reason", "attempts")
        .containsEntry(
            "error",
            "java.net.SocketException: Connection reset by http://h/x Authorization: <redacted>");
  }

  @Test
  void credentialHeadersQuotedInAnExceptionMessageAreRedacted() throws IOException {
    // A client that quotes the server's JSON error body, or its own request's headers as a map.
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("llm", b -> b.maxAttempts(2)), w);
    IOException cookie =
        new IOException("rejected: {\"Cookie\":\"session=SECRET1\", \"accept\":\"*/*\"}");
    IOException auth =
        new IOException("rejected: {\"Authorization\": \"Token SECRET2\"} then reset");

    rig.call(FakeRequest.of("GET", "http", "h.example", 8080, "/v1/x"), cookie, cookie);
    rig.call(FakeRequest.of("GET", "http", "h.example", 8080, "/v1/y"), auth, auth);
    w.close();

    List<String> lines = lines(file);
    assertThat(lines).hasSize(2).allSatisfy(l -> assertThat(l).doesNotContain("SECRET"));
    assertThat(MiniJson.parseObject(lines.get(0)))
        .containsEntry("error", "java.io.IOException: rejected: {\"Cookie\":<redacted>");
    assertThat(MiniJson.parseObject(lines.get(1)))
        .containsEntry("error", "java.io.IOException: rejected: {\"Authorization\": <redacted>");
  }

  @Test
  void quotesNewlinesAndControlCharactersAreEscapedAndQueriesDropped() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    String route = "pay\"ments\\\n\u0001\u2028x";
    Policy p = Rig.policy(route);
    Rig rig = new Rig(p, w);

    rig.call(FakeRequest.post("pay.example.com", "/v1/a\"b?token=SECRET#SECRET"), 503);
    w.close();

    String raw = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
    assertThat(raw).doesNotContain("SECRET").endsWith("\n");
    assertThat(raw.substring(0, raw.length() - 1).chars())
        .noneMatch(c -> c < 0x20 || c == '\u2028');
    Map<String, Object> json = MiniJson.parseObject(raw.substring(0, raw.length() - 1));
    assertThat(json).containsEntry("route", route).containsEntry("path", "/v1/a\"b");
  }

  @Test
  void giveUpsFromManyThreadsBecomeWholeParseableLines() throws Exception {
    Path file = dir.resolve("not/yet/there/dead.jsonl");
    DeadLetterWriter w = writer(file);
    Policy noBreaker =
        Rig.policy(
            "payments",
            b -> b,
            CircuitBreakerPolicy.builder().enabled(false).build(),
            BudgetPolicy.defaults(),
            RateLimitPolicy.defaults());
    Rig rig = new Rig(noBreaker, w);
    int threads = 8;
    int perThread = 250;
    Rig.onThreads(
        threads,
        perThread,
        (id, i) -> rig.call(FakeRequest.post("pay.example.com", "/v1/t" + id + "/c" + i), 503));

    await().atMost(WAIT).until(() -> w.written() == threads * perThread);
    List<String> lines = lines(file);
    assertThat(lines).hasSize(threads * perThread);
    List<Object> paths = new ArrayList<>();
    for (String line : lines) {
      Map<String, Object> json = MiniJson.parseObject(line);
      assertThat(json).containsEntry("reason", "not-idempotent");
      paths.add(json.get("path"));
    }
    assertThat(paths).doesNotHaveDuplicates();
    assertThat(w.dropped()).isZero();
  }

  @Test
  void theFileIsOpenedOnlyAtTheFirstDeadLetter() {
    Path file = dir.resolve("lazy/dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("llm"), w);

    rig.call(FakeRequest.get("h.example", "/"), 503, 200);

    assertThat(file.getParent()).doesNotExist();
    rig.call(FakeRequest.post("h.example", "/"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);
    assertThat(file).exists();
  }

  @Test
  void anUnwritablePathNeverReachesTheCallAndIsReportedOnce() {
    Path blocker = dir.resolve("blocker");
    DeadLetterWriter w = writer(blocker.resolve("dead.jsonl"));
    Rig rig = new Rig(Rig.policy("payments"), w);

    try {
      Files.writeString(blocker, "a file where a directory should be");
    } catch (IOException e) {
      throw new AssertionError(e);
    }
    for (int i = 0; i < 3; i++) {
      Object result = rig.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);
      assertThat(result).isInstanceOf(Rig.Resp.class);
    }

    await().atMost(WAIT).until(() -> w.dropped() == 3);
    assertThat(w.written()).isZero();
    assertThat(errors).hasSize(1);
    assertThat(errors.get(0))
        .startsWith(
            "retry-agent: cannot open the dead-letter file " + blocker.resolve("dead.jsonl"))
        .contains("dead letters are dropped");
  }

  @Test
  void aUrlWrittenAsThePathIsNamedWithoutItsPasswordAlsoInTheFileSystemsMessage()
      throws IOException {
    // agent.deadLetter.path: ${DLQ_URL}, a URL meant for another key. Path writes its "//" as
    // "/", which Sanitizer does not read as a URL, and the file system's message names the
    // directory it could not create: a file stands where "u:password@host" would be one.
    Path file = dir.resolve("https://u:CANARY7z@host/x/dead.jsonl");
    Files.createDirectories(dir.resolve("https:"));
    Files.writeString(dir.resolve("https:").resolve("u:CANARY7z@host"), "not a directory");
    assertThat(theOneOpenFailure(file))
        .startsWith(
            "retry-agent: cannot open the dead-letter file "
                + dir
                + "/https://***@host/x/dead.jsonl (java.nio.file.")
        .contains(dir + "/https://***@host")
        .doesNotContain("CANARY7z");
  }

  /** The one line of a writer to {@code file} that cannot open it, after one give-up. */
  private String theOneOpenFailure(Path file) {
    DeadLetterWriter w = writer(file);
    new Rig(Rig.policy("payments"), w).call(FakeRequest.post("pay.example.com", "/v1/c"), 503);
    await().atMost(WAIT).until(() -> w.dropped() == 1);
    assertThat(errors).hasSize(1);
    return errors.get(0);
  }

  @Test
  void aUserInfoWithoutASchemeWrittenAsThePathIsNamedWithoutItsPasswordAlsoInTheFileSystemsMessage()
      throws IOException {
    // ${DLQ_TARGET} = u:password@host:/dlq (scp's form): a file stands where the directory
    // "u:password@host:" would be made, and the file system's message names it.
    Path file = dir.resolve("u:CANARY7z@host:/dlq/dead.jsonl");
    Files.writeString(dir.resolve("u:CANARY7z@host:"), "not a directory");
    assertThat(theOneOpenFailure(file))
        .startsWith(
            "retry-agent: cannot open the dead-letter file "
                + dir
                + "/***@host:/dlq/dead.jsonl (java.nio.file.")
        .contains(dir + "/***@host:")
        .doesNotContain("CANARY7z");
  }

  @Test
  void aWriteThatFailsHalfwayLeavesTheNextLinesWhole() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    AtomicInteger opens = new AtomicInteger();
    DeadLetterWriter w =
        opening(
            file,
            path -> {
              java.nio.channels.FileChannel real = DeadLetterWriter.openForAppend(path);
              return opens.incrementAndGet() == 1 ? new FailingChannel(real, 10) : real;
            });
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.post("pay.example.com", "/first"), 503);
    await().atMost(WAIT).until(() -> w.dropped() == 1);
    rig.call(FakeRequest.post("pay.example.com", "/second"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);

    List<String> lines = lines(file);
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).hasSize(10);
    assertThat(MiniJson.parseObject(lines.get(1))).containsEntry("path", "/second");
    assertThat(errors).hasSize(1);
    assertThat(errors.get(0))
        .startsWith("retry-agent: cannot write to the dead-letter file")
        .contains("No space left on device");
  }

  @Test
  void aDiskThatFillsInTheMiddleOfABatchCountsTheLinesThatLandedAsWrittenAndTheNextStartsANewLine()
      throws Exception {
    // The lines before the failed write's position are in the file: they were counted dropped,
    // whole batch, so the dropped count was too high and the written one too low.
    Path file = dir.resolve("dead.jsonl");
    Semaphore gate = new Semaphore(0);
    AtomicReference<FailingChannel> failing = new AtomicReference<>();
    DeadLetterWriter w =
        opening(
            file,
            path -> {
              java.nio.channels.FileChannel real = DeadLetterWriter.openForAppend(path);
              if (failing.get() != null) {
                return real;
              }
              failing.set(new FailingChannel(real, Integer.MAX_VALUE, gate));
              return failing.get();
            });
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/p1"), 503);
    await().atMost(WAIT).until(() -> failing.get() != null && failing.get().linesInWrite == 1);
    for (String p : List.of("/p2", "/p3", "/p4")) {
      rig.call(FakeRequest.post("pay.example.com", p), 503); // queued behind the held write
    }
    gate.release();
    await().atMost(WAIT).until(() -> w.written() == 1);
    int line = (int) Files.size(file);
    // The next write holds /p2, /p3 and /p4: /p2 lands whole, /p3 is cut (each line is about
    // as long as the first).
    failing.get().okBytes(line + line / 2);
    gate.release(2); // the write that fills the disk, and the one after it that fails
    await().atMost(WAIT).until(() -> w.written() + w.dropped() == 4);

    assertThat(w.written()).isEqualTo(2);
    assertThat(w.dropped()).isEqualTo(2);
    rig.call(FakeRequest.post("pay.example.com", "/p5"), 503);
    await().atMost(WAIT).until(() -> w.written() == 3);
    List<String> lines = lines(file);
    assertThat(lines).hasSize(4);
    assertThat(MiniJson.parseObject(lines.get(1))).containsEntry("path", "/p2");
    assertThat(lines.get(2)).startsWith("{\"time\"").doesNotEndWith("}"); // /p3, cut
    assertThat(MiniJson.parseObject(lines.get(3))).containsEntry("path", "/p5");
  }

  @Test
  void anErrorWhileWritingDropsThatBatchCountedAndTheWriterGoesOnWithTheNext() throws Exception {
    // An OutOfMemoryError (or any Error) in the writer thread ended it: the batch was cleared
    // uncounted, and every later line waited in the queue for a thread that was gone, uncounted,
    // until the queue was full.
    Path file = dir.resolve("dead.jsonl");
    AtomicInteger opens = new AtomicInteger();
    DeadLetterWriter w =
        opening(
            file,
            path -> {
              java.nio.channels.FileChannel real = DeadLetterWriter.openForAppend(path);
              if (opens.incrementAndGet() > 1) {
                return real;
              }
              return new FailingChannel(real, Integer.MAX_VALUE) {
                @Override
                public int write(java.nio.ByteBuffer src) {
                  throw new OutOfMemoryError("Java heap space (a test's)");
                }
              };
            });
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/first"), 503);
    await().atMost(WAIT).until(() -> w.dropped() == 1);
    rig.call(FakeRequest.post("pay.example.com", "/second"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);

    assertThat(MiniJson.parseObject(lines(file).get(0))).containsEntry("path", "/second");
    assertThat(errors)
        .singleElement()
        .asString()
        .startsWith("retry-agent: writing to the dead-letter file ")
        .contains("java.lang.OutOfMemoryError: Java heap space (a test's)")
        .endsWith("the dead letters being written were dropped");
  }

  @Test
  void aFileRotatedAwayIsCreatedAgainForTheNextLines() throws IOException {
    Path file = dir.resolve("logs/dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/before"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);

    // logrotate's default: the file is renamed, and the next lines belong in a new one.
    Path rotated = dir.resolve("logs/dead.jsonl.1");
    Files.move(file, rotated);
    rig.call(FakeRequest.post("pay.example.com", "/after-rename"), 503);
    await().atMost(WAIT).until(() -> w.written() + w.dropped() == 2);

    assertThat(lines(rotated)).hasSize(1);
    assertThat(file).exists();
    assertThat(lines(file)).hasSize(1);
    assertThat(MiniJson.parseObject(lines(file).get(0))).containsEntry("path", "/after-rename");

    // Deleted, directory and all (rotated and removed, a cleaned-up log directory).
    Files.delete(rotated);
    Files.delete(file);
    Files.delete(file.getParent());
    rig.call(FakeRequest.post("pay.example.com", "/after-delete"), 503);
    await().atMost(WAIT).until(() -> w.written() + w.dropped() == 3);

    assertThat(w.written()).isEqualTo(3);
    assertThat(lines(file)).hasSize(1);
    assertThat(MiniJson.parseObject(lines(file).get(0))).containsEntry("path", "/after-delete");
    assertThat(errors).isEmpty();
  }

  @Test
  void aFileRotatedAwayWhileTheWriterOpensItIsNotWrittenToForGood() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    Path rotated = dir.resolve("dead.jsonl.1");
    Files.writeString(file, "{\"old\":1}\n");
    AtomicInteger opens = new AtomicInteger();
    DeadLetterWriter w =
        opening(
            file,
            path -> {
              java.nio.channels.FileChannel opened = DeadLetterWriter.openForAppend(path);
              if (opens.incrementAndGet() == 1) {
                // logrotate renames the file and creates the next one just after this open: the
                // file at the path is not the one open.
                Files.move(path, rotated);
                Files.createFile(path);
              }
              return opened;
            });
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/raced-the-rotation"), 503);
    await().atMost(WAIT).until(() -> w.written() + w.dropped() == 1);

    rig.call(FakeRequest.post("pay.example.com", "/after"), 503);
    await().atMost(WAIT).until(() -> w.written() + w.dropped() == 2);

    // The line that raced the rotation may land in either file; the next one is at the path.
    assertThat(lines(file)).anyMatch(l -> l.contains("/after"));
    assertThat(lines(rotated)).noneMatch(l -> l.contains("/after"));
    assertThat(w.written()).isEqualTo(2);
  }

  @Test
  void aLineTornByAnEarlierJvmIsEndedBeforeTheFirstNewLine() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    Files.writeString(file, "{\"whole\":1}\n{\"torn by SIGK");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.post("pay.example.com", "/after"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);

    List<String> lines = lines(file);
    assertThat(lines).hasSize(3);
    assertThat(lines.get(1)).isEqualTo("{\"torn by SIGK");
    assertThat(MiniJson.parseObject(lines.get(2))).containsEntry("path", "/after");
  }

  @Test
  void aFullQueueDropsAndCountsInsteadOfBlocking() throws Exception {
    HeldOpen held = new HeldOpen(WAIT);
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = new DeadLetterWriter(file, errors::add, 1, held);
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.post("pay.example.com", "/1"), 503);
    assertThat(held.awaitOpening()).isTrue();
    rig.call(FakeRequest.post("pay.example.com", "/2"), 503);
    rig.call(FakeRequest.post("pay.example.com", "/3"), 503);
    held.release();
    assertThat(w.close(WAIT)).isTrue();

    assertThat(w.written()).isEqualTo(2);
    assertThat(w.dropped()).isEqualTo(1);
    assertThat(lines(file)).hasSize(2);
    assertThat(errors).hasSize(2);
    assertThat(errors.get(0)).contains("dead-letter queue").contains("is full");
    assertThat(errors.get(1)).contains("has room again; 1 dead letter was dropped");
  }

  @Test
  void aFullQueueIsSaidOncePerEpisodeWithWhatItDropped() throws Exception {
    // Said once for the writer's life: a second episode of drops (the next slow spell of the
    // disk, days later) went unsaid, and nothing ever said the drops had stopped.
    Semaphore disk = new Semaphore(0);
    DeadLetterWriter w = heldUpByTheDisk(dir.resolve("dead.jsonl"), 1, disk);
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.post("pay.example.com", "/1"), 503);
    await().atMost(WAIT).until(disk::hasQueuedThreads); // /1 held up in its write
    rig.call(FakeRequest.post("pay.example.com", "/2"), 503); // queued
    rig.call(FakeRequest.post("pay.example.com", "/3"), 503); // dropped: said
    rig.call(FakeRequest.post("pay.example.com", "/4"), 503); // dropped: not said again
    assertThat(errors).singleElement().asString().contains("dead-letter queue").contains("is full");

    disk.release(2);
    await().atMost(WAIT).until(() -> w.written() == 2 && errors.size() == 2);
    assertThat(errors.get(1)).contains("has room again; 2 dead letters were dropped");

    rig.call(FakeRequest.post("pay.example.com", "/5"), 503);
    await().atMost(WAIT).until(disk::hasQueuedThreads);
    rig.call(FakeRequest.post("pay.example.com", "/6"), 503);
    rig.call(FakeRequest.post("pay.example.com", "/7"), 503);
    assertThat(errors).hasSize(3);
    assertThat(errors.get(2)).contains("dead-letter queue").contains("is full");

    disk.release(100);
    await().atMost(WAIT).until(() -> errors.size() == 4);
    assertThat(errors.get(3)).contains("has room again; 1 dead letter was dropped");
    assertThat(w.close(WAIT)).isTrue();
    assertThat(w.written()).isEqualTo(4);
    assertThat(w.dropped()).isEqualTo(3);
  }

  @Test
  void linesHeldUpInASlowWriteCountTowardTheQueuesHeapBound() throws Exception {
    // 10,000 lines bounded the queue by count only: a path has no length limit, so a burst of
    // give-ups on long paths (a 4 KB path each) held 40 MB in the application's heap while the
    // writer waited for the disk. Then it was bounded at 8 Mi characters (16 MiB as the strings
    // of lines with a character past Latin-1), and a batch the writer thread had taken (up to 512
    // lines, however long)
    // stopped counting before its write: while the disk held that write up, the queue took as
    // much again, and the batch's encoded copy came on top.
    Semaphore disk = new Semaphore(1); // the first line's write goes through
    HeldOpen held = new HeldOpen(WAIT, disk);
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w =
        new DeadLetterWriter(file, errors::add, DeadLetterWriter.DEFAULT_CAPACITY, held);
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);
    String longPath = "/" + "a".repeat(4096);
    int calls = 1;
    rig.call(FakeRequest.post("pay.example.com", longPath), 503);
    assertThat(held.awaitOpening()).isTrue();
    while (w.dropped() == 0 && calls < DeadLetterWriter.DEFAULT_CAPACITY) {
      rig.call(FakeRequest.post("pay.example.com", longPath), 503);
      calls++;
    }
    assertThat(w.dropped()).isPositive(); // full before 10,000 lines: the heap bound
    assertThat(errors).singleElement().asString().contains("dead-letter queue").contains("is full");
    held.release(); // the first line is written, the next batch held up in its write
    await().atMost(WAIT).until(disk::hasQueuedThreads);

    for (int i = 0; i < 1_000; i++) {
      rig.call(FakeRequest.post("pay.example.com", longPath), 503);
      calls++;
    }

    int lineChars = lines(file).get(0).length() + 1; // ASCII: a character a byte
    long kept = (long) w.pending() + held.channel().linesInWrite;
    assertThat(kept * 2 * lineChars).isLessThanOrEqualTo(DeadLetterWriter.MAX_HELD_BYTES);
    disk.release(100_000);
    await().atMost(WAIT).until(() -> errors.size() == 2);
    assertThat(w.close(WAIT)).isTrue();
    assertThat(w.written() + w.dropped()).isEqualTo(calls);
    assertThat(lines(file)).hasSize((int) w.written());
    assertThat(errors.get(1))
        .contains(w.dropped() + " dead letters were dropped while it was full");
  }

  @Test
  void aCloseThatTimedOutStillEndsTheWriterThreadOnceWhatWasQueuedIsWritten() throws Exception {
    // A reload that switches the path closes the old writer with a bounded wait; a disk slow past
    // that wait (a hung NFS mount) left the old writer's thread waiting for lines forever, its
    // file open, one more per switch.
    CountDownLatch opening = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicReference<Thread> writerThread =
        new java.util.concurrent.atomic.AtomicReference<>();
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w =
        new DeadLetterWriter(
            file,
            errors::add,
            1,
            path -> {
              writerThread.set(Thread.currentThread());
              opening.countDown();
              try {
                release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return DeadLetterWriter.openForAppend(path);
            });
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/1"), 503);
    assertThat(opening.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
    rig.call(FakeRequest.post("pay.example.com", "/2"), 503); // the queue is full now

    assertThat(w.close(Duration.ofMillis(20))).isFalse();
    release.countDown();

    await().atMost(WAIT).until(() -> !writerThread.get().isAlive());
    assertThat(w.written()).isEqualTo(2);
    assertThat(lines(file)).hasSize(2);
  }

  @Test
  void aWriterThreadThatCouldNotStartIsStartedByTheNextGiveUp() throws IOException {
    // A JVM out of threads (a container's pids limit) at the first give-up: the thread was never
    // started, and never tried again, so no dead letter was written for the JVM's life and the
    // queue filled up ("queue is full").
    AtomicInteger starts = new AtomicInteger();
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w =
        new DeadLetterWriter(
            file,
            errors::add,
            100,
            DeadLetterWriter::openForAppend,
            t -> {
              if (starts.incrementAndGet() == 1) {
                throw new OutOfMemoryError(
                    "unable to create native thread: possibly out of memory");
              }
              t.start();
            });
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);

    assertThat(rig.call(FakeRequest.post("pay.example.com", "/first"), 503))
        .isInstanceOf(Rig.Resp.class);
    rig.call(FakeRequest.post("pay.example.com", "/second"), 503);
    await().atMost(WAIT).until(() -> w.written() == 2);

    assertThat(lines(file))
        .extracting(l -> MiniJson.parseObject(l).get("path"))
        .containsExactly("/first", "/second");
    assertThat(w.dropped()).isZero();
    assertThat(errors)
        .singleElement()
        .asString()
        .startsWith("retry-agent: cannot start the dead-letter writer")
        .contains("unable to create native thread");
  }

  /**
   * r22 #5: the error sink (the agent's stderr, a library user's consumer) failing with an Error as
   * the writer says why its thread could not start: the line was queued, and the give-up's catch
   * counted it dropped as well; the next give-up's thread wrote it. Written and counted dropped:
   * counted twice, and the dropped count said a dead letter was lost that was not.
   */
  @Test
  void aLineQueuedIsNotCountedDroppedWhenSayingWhyTheThreadDidNotStartFails() throws IOException {
    AtomicInteger starts = new AtomicInteger();
    Path file = dir.resolve("dead.jsonl");
    RetryMetrics metrics = new RetryMetrics();
    DeadLetterWriter w =
        new DeadLetterWriter(
            file,
            line -> {
              throw new NoClassDefFoundError("the sink's own class");
            },
            100,
            DeadLetterWriter::openForAppend,
            t -> {
              if (starts.incrementAndGet() == 1) {
                throw new OutOfMemoryError(
                    "unable to create native thread: possibly out of memory");
              }
              t.start();
            },
            metrics);
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);

    rig.call(FakeRequest.post("pay.example.com", "/first"), 503);
    rig.call(FakeRequest.post("pay.example.com", "/second"), 503);
    await().atMost(WAIT).until(() -> w.written() == 2);

    assertThat(lines(file)).hasSize(2);
    assertThat(w.dropped()).isZero();
    assertThat(metrics.deadLettersDropped()).isZero();
  }

  /**
   * The same for a line dropped: after the JVM's exit began, the sink failing as the writer says so
   * once; the give-up's catch counted the line a second time.
   */
  @Test
  void aLineDroppedIsCountedOnceWhenSayingSoFails() {
    Path file = dir.resolve("dead.jsonl");
    RetryMetrics metrics = new RetryMetrics();
    DeadLetterWriter w =
        new DeadLetterWriter(
            file,
            line -> {
              throw new NoClassDefFoundError("the sink's own class");
            },
            100,
            DeadLetterWriter::openForAppend,
            Thread::start,
            metrics);
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);
    w.closeAtExit(Duration.ofSeconds(1));

    Object result = rig.call(FakeRequest.post("pay.example.com", "/x"), 503);

    assertThat(result).isInstanceOf(Rig.Resp.class);
    assertThat(w.dropped()).isEqualTo(1);
    assertThat(metrics.deadLettersDropped()).isEqualTo(1);
  }

  @Test
  void droppedLinesAreScrapedFromPrometheusAndReadFromJmx() throws Exception {
    // The dropped count was reported nowhere: an operator saw that dead letters were lost only
    // from one error line, however many were.
    CountDownLatch opening = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    RetryMetrics metrics = new RetryMetrics();
    DeadLetterWriter w =
        new DeadLetterWriter(
            dir.resolve("dead.jsonl"),
            errors::add,
            1,
            path -> {
              opening.countDown();
              try {
                release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              throw new AccessDeniedException(path.toString());
            },
            Thread::start,
            metrics);
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/1"), 503);
    assertThat(opening.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
    rig.call(FakeRequest.post("pay.example.com", "/2"), 503); // queued: the queue is full
    rig.call(FakeRequest.post("pay.example.com", "/3"), 503); // dropped: queue full
    release.countDown(); // the file cannot be opened: /1 and /2 are dropped too
    await().atMost(WAIT).until(() -> w.dropped() == 3);

    PrometheusServer prometheus =
        new PrometheusServer(metrics, rig.engine, "127.0.0.1", 0, errors::add);
    JmxMetrics jmx = new JmxMetrics(metrics, rig.engine, errors::add, "dev.retryagent.deadletters");
    try {
      assertThat(prometheus.start()).isTrue();
      HttpResponse<String> scrape =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + prometheus.port() + "/metrics"))
                      .timeout(Duration.ofSeconds(5))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertThat(scrape.body().lines())
          .containsSubsequence(
              "# HELP retryagent_dead_letters_dropped_total Dead letters (agent.deadLetter.path)"
                  + " lost: queue full, file unwritable or write failed.",
              "# TYPE retryagent_dead_letters_dropped_total counter",
              "retryagent_dead_letters_dropped_total 3");

      assertThat(jmx.register()).isTrue();
      assertThat(
              ManagementFactory.getPlatformMBeanServer()
                  .getAttribute(
                      JmxMetrics.engineName("dev.retryagent.deadletters"), "DeadLettersDropped"))
          .isEqualTo(3L);
    } finally {
      prometheus.stop();
      jmx.unregister();
    }
  }

  @Test
  void aGiveUpThatRacesTheCloseIsWrittenOrCountedNeverLeftInTheQueue() throws Exception {
    // A give-up that found the writer open was queued after the writer thread had written its
    // queue and ended: neither written nor counted as dropped, left in the queue for good. The
    // line is built between the two (the exception's message formatted on the caller's thread),
    // which this exception holds until the writer has closed.
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/before"), 503);
    await().atMost(WAIT).until(() -> w.written() == 1);
    CountDownLatch formatting = new CountDownLatch(1);
    CountDownLatch closed = new CountDownLatch(1);
    IOException slow =
        new IOException() {
          @Override
          public String getMessage() {
            formatting.countDown();
            try {
              closed.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            return "slow to say";
          }
        };
    ExecutorService caller = Executors.newSingleThreadExecutor();
    try {
      Future<Object> racing =
          caller.submit(() -> rig.call(FakeRequest.post("pay.example.com", "/racing"), slow));
      assertThat(formatting.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

      assertThat(w.close(WAIT)).as("the writer thread wrote its queue and ended").isTrue();
      closed.countDown();
      assertThat(racing.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isSameAs(slow);
    } finally {
      caller.shutdownNow();
    }

    assertThat(w.written() + w.dropped()).as("every line offered, written or dropped").isEqualTo(2);
    assertThat(w.dropped()).isEqualTo(1);
    assertThat(w.pending()).isZero();
    assertThat(lines(file)).hasSize(1);
  }

  @Test
  void linesQueuedForAWriterThreadThatNeverStartedAreCountedAtClose() {
    // A writer thread that could not start (the JVM out of threads) leaves its lines queued for
    // the next give-up to start it; a close before one could left them there for good, neither
    // written nor counted.
    RetryMetrics metrics = new RetryMetrics();
    DeadLetterWriter w =
        new DeadLetterWriter(
            dir.resolve("dead.jsonl"),
            errors::add,
            100,
            DeadLetterWriter::openForAppend,
            t -> {
              throw new OutOfMemoryError("unable to create native thread");
            },
            metrics);
    writers.add(w);
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/1"), 503);
    rig.call(FakeRequest.post("pay.example.com", "/2"), 503);
    assertThat(w.pending()).isEqualTo(2);
    assertThat(w.dropped()).isZero();

    assertThat(w.close(WAIT)).isTrue();

    assertThat(w.pending()).isZero();
    assertThat(w.dropped()).isEqualTo(2);
    assertThat(metrics.deadLettersDropped()).isEqualTo(2);
  }

  @Test
  void afterCloseLinesAreDroppedNotThrown() {
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);
    w.close();

    Object result = rig.call(FakeRequest.post("pay.example.com", "/x"), 503);

    assertThat(result).isInstanceOf(Rig.Resp.class);
    assertThat(w.dropped()).isEqualTo(1);
    assertThat(file).doesNotExist();
    // A reload's switch: the dropped count says it; the exit's line is for the exit only.
    assertThat(errors).isEmpty();
  }

  @Test
  void aWriteHeldUpAtExitHoldsTheHookOnlyItsWaitAndLeavesWholeLines() throws Exception {
    // Checked, held: the exit hook runs beside the application's own (the JDK starts every hook
    // at once), so the writer may still be in a write the disk holds up while they run. The hook
    // waits only its bound, then counts and says what was still queued; the write, once the disk
    // lets it end, lands whole lines only, and nothing queued after the wait is written.
    Semaphore disk = new Semaphore(0);
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = heldUpByTheDisk(file, DeadLetterWriter.DEFAULT_CAPACITY, disk);
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/in-write"), 503);
    await().atMost(WAIT).until(disk::hasQueuedThreads);
    rig.call(FakeRequest.post("pay.example.com", "/queued-1"), 503);
    rig.call(FakeRequest.post("pay.example.com", "/queued-2"), 503);

    assertThat(w.closeAtExit(Duration.ofMillis(50))).isFalse(); // the hook's wait, then on
    assertThat(w.abandonAtExit(Duration.ofMillis(50))).isEqualTo(2);
    rig.call(FakeRequest.post("pay.example.com", "/after"), 503);
    disk.release(100);
    await().atMost(WAIT).until(w::done);

    assertThat(Files.readString(file)).endsWith("\n");
    assertThat(lines(file))
        .singleElement()
        .satisfies(l -> assertThat(MiniJson.parseObject(l)).containsEntry("path", "/in-write"));
    assertThat(w.written()).isEqualTo(1);
    assertThat(w.dropped()).isEqualTo(3);
    assertThat(errors)
        .containsExactly(
            "retry-agent: at exit, 2 dead letters for "
                + file
                + " were dropped, not written: the 50ms the agent waits at exit ran out (1 more"
                + " being written)",
            saidDroppedAfterExit(file));
  }

  @Test
  void aCallThatGivesUpAfterTheExitBeganIsSaidOnceAndNeverHalfWritten() throws IOException {
    // A call of the application's own shutdown hook (a graceful shutdown draining its requests)
    // may give up after the agent's exit hook closed the writer: its line was dropped, counted
    // where nobody would read the count again. It is still not written, since the JVM halts
    // without waiting for the writer's thread and a line cut short is lost to a reader, but the
    // operator is told.
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Rig.policy("payments"), w);
    rig.call(FakeRequest.post("pay.example.com", "/before"), 503);

    assertThat(w.closeAtExit(WAIT)).isTrue();
    rig.call(FakeRequest.post("pay.example.com", "/after-1"), 503);
    rig.call(FakeRequest.post("pay.example.com", "/after-2"), 503);

    assertThat(Files.readString(file)).endsWith("\n");
    assertThat(lines(file)).hasSize(1).allMatch(l -> l.contains("\"path\":\"/before\""));
    assertThat(w.written()).isEqualTo(1);
    assertThat(w.dropped()).isEqualTo(2);
    assertThat(errors).containsExactly(saidDroppedAfterExit(file));
  }

  /** The one line said when calls give up after the exit closed the writer of {@code file}. */
  private static String saidDroppedAfterExit(Path file) {
    return "retry-agent: a call gave up after the JVM's exit had begun; its dead letter for "
        + file
        + " is dropped, not written (the JVM may end in the middle of a write), and so is any"
        + " later one";
  }

  @Test
  void aCallObserveModeWouldHaveRetriedIsNoDeadLetterButAnObservedGiveUpIs() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = writer(file);
    Rig rig = new Rig(Mode.OBSERVE, Rig.policy("llm"), w);

    rig.call(FakeRequest.get("h.example", "/retryable"), 503);
    rig.call(FakeRequest.post("h.example", "/unsafe"), 503);
    w.close();

    assertThat(lines(file))
        .singleElement()
        .satisfies(
            l ->
                assertThat(MiniJson.parseObject(l))
                    .containsEntry("path", "/unsafe")
                    .containsEntry("observe", true));
  }
}
