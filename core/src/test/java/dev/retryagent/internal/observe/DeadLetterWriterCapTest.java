package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.internal.Units;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code agent.deadLetter.maxBytes}: a long outage must not fill the disk the host needs (1,000
 * give-ups a second of ~300 B each are ~26 GB a day), and rotation must let writing resume.
 */
class DeadLetterWriterCapTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir Path dir;
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private final List<DeadLetterWriter> writers = new ArrayList<>();
  private final RetryMetrics metrics = new RetryMetrics();
  private Path file;
  private DeadLetterWriter w;
  private Rig rig;

  @AfterEach
  void close() {
    writers.forEach(DeadLetterWriter::close);
  }

  private void open(DeadLetterWriter.Opener opener) {
    open(dir.resolve("dead.jsonl"), opener);
  }

  private void open(Path at, DeadLetterWriter.Opener opener) {
    file = at;
    w = new DeadLetterWriter(file, errors::add, 100, opener, Thread::start, metrics);
    writers.add(w);
    rig = new Rig(Rig.policy("payments"), w);
  }

  /** One give-up, handled (written or dropped) before this returns. */
  private void giveUp(String path) {
    long before = w.written() + w.dropped();
    rig.call(FakeRequest.post("pay.example.com", path), 503);
    await().atMost(WAIT).until(() -> w.written() + w.dropped() == before + 1);
  }

  private List<String> lines() throws IOException {
    return Files.readAllLines(file, StandardCharsets.UTF_8);
  }

  private String reached(long cap) {
    return "retry-agent: the dead-letter file "
        + file
        + " has reached agent.deadLetter.maxBytes ("
        + Units.formatSize(cap)
        + "); dead letters that would take it past that are dropped, not written, until it is"
        + " rotated";
  }

  private String below(long cap) {
    return "retry-agent: the dead-letter file "
        + file
        + " is below agent.deadLetter.maxBytes ("
        + Units.formatSize(cap)
        + ") again; dead letters are written to it again";
  }

  @Test
  void theCapsLinesNameAUrlWrittenAsThePathWithoutItsPassword() throws IOException {
    // ${DLQ_URL} as agent.deadLetter.path: a Path (https:/u:...@host/x) the file system takes.
    open(dir.resolve("https://u:CANARY7z@host/dead.jsonl"), DeadLetterWriter::openForAppend);
    giveUp("/1");
    long cap = Files.size(file) + 1;
    w.setMaxBytes(cap);

    giveUp("/2");
    w.setMaxBytes(0);
    giveUp("/3");

    assertThat(errors)
        .containsExactly(
            "retry-agent: the dead-letter file "
                + dir
                + "/https://***@host/dead.jsonl has reached agent.deadLetter.maxBytes ("
                + Units.formatSize(cap)
                + "); dead letters that would take it past that are dropped, not written, until"
                + " it is rotated",
            "retry-agent: the dead-letter file "
                + dir
                + "/https://***@host/dead.jsonl has no agent.deadLetter.maxBytes any more; dead"
                + " letters are written to it again");
  }

  @Test
  void theCapsLinesNameAUserInfoWithoutASchemeWrittenAsThePathWithoutItsPassword()
      throws IOException {
    // ${DLQ_TARGET} = u:password@host:/dlq (scp's form) as agent.deadLetter.path.
    open(dir.resolve("u:CANARY7z@host:/dlq/dead.jsonl"), DeadLetterWriter::openForAppend);
    giveUp("/1");
    w.setMaxBytes(Files.size(file) + 1);
    giveUp("/2");

    assertThat(errors)
        .singleElement()
        .asString()
        .startsWith("retry-agent: the dead-letter file " + dir + "/***@host:/dlq/dead.jsonl has")
        .doesNotContain("CANARY7z");
  }

  @Test
  void linesPastTheCapAreDroppedWholeCountedAndSaidOnce() throws IOException {
    open(DeadLetterWriter::openForAppend);
    giveUp("/1");
    long line = Files.size(file);
    long cap = 2 * line + line / 2; // room for two lines and half of a third
    w.setMaxBytes(cap);

    giveUp("/2");
    giveUp("/3");
    giveUp("/4");

    assertThat(lines()).hasSize(2).allSatisfy(l -> MiniJson.parseObject(l));
    assertThat(Files.readString(file)).endsWith("\n");
    assertThat(Files.size(file)).isEqualTo(2 * line).isLessThanOrEqualTo(cap);
    assertThat(w.written()).isEqualTo(2);
    assertThat(w.dropped()).isEqualTo(2);
    assertThat(metrics.deadLettersDropped()).isEqualTo(2);
    assertThat(errors).containsExactly(reached(cap));
    assertThat(String.join("\n", errors)).doesNotContain("/3").doesNotContain("pay.example.com");
  }

  @Test
  void withinOneBatchTheRunningSizeKeepsTheFileUnderTheCapWithoutAPartialLine() throws Exception {
    // Lines queued while the file is being opened are written in one batch: the cap must hold
    // line by line inside it, from the size the writer keeps, not only between batches.
    HeldOpen held = new HeldOpen(WAIT);
    open(held);
    Path probe = dir.resolve("probe.jsonl");
    DeadLetterWriter p = new DeadLetterWriter(probe, errors::add);
    writers.add(p);
    new Rig(Rig.policy("payments"), p).call(FakeRequest.post("pay.example.com", "/0"), 503);
    p.close(WAIT);
    long line = Files.size(probe);
    w.setMaxBytes(3 * line - 1); // two lines fit, the third would pass it by one byte

    rig.call(FakeRequest.post("pay.example.com", "/1"), 503);
    assertThat(held.awaitOpening()).isTrue();
    for (int i = 2; i <= 5; i++) {
      rig.call(FakeRequest.post("pay.example.com", "/" + i), 503);
    }
    held.release();
    assertThat(w.close(WAIT)).isTrue();

    assertThat(lines()).hasSize(2);
    assertThat(MiniJson.parseObject(lines().get(1))).containsEntry("path", "/2");
    assertThat(Files.size(file)).isEqualTo(2 * line);
    assertThat(w.written()).isEqualTo(2);
    assertThat(w.dropped()).isEqualTo(3);
    assertThat(errors).containsExactly(reached(3 * line - 1));
  }

  @Test
  void aFileRenamedAwayOrTruncatedGetsLinesAgainAndEachResumeIsSaidOnce() throws IOException {
    open(DeadLetterWriter::openForAppend);
    giveUp("/1");
    long line = Files.size(file); // every path here has 2 characters: every line this size
    long cap = line + line / 2;
    w.setMaxBytes(cap);
    giveUp("/a");
    giveUp("/b");

    // logrotate's default: renamed away; the next line goes to a new file at the path.
    Files.move(file, dir.resolve("dead.jsonl.1"));
    giveUp("/r");
    assertThat(lines()).singleElement().asString().contains("\"/r\"");
    giveUp("/c");

    // copytruncate: the same file, emptied in place.
    try (FileChannel c = FileChannel.open(file, StandardOpenOption.WRITE)) {
      c.truncate(0);
    }
    giveUp("/t");
    assertThat(lines()).singleElement().asString().contains("\"/t\"");

    assertThat(w.written()).isEqualTo(3);
    assertThat(w.dropped()).isEqualTo(3);
    assertThat(errors).containsExactly(reached(cap), below(cap), reached(cap), below(cap));
  }

  @Test
  void aLineLargerThanTheCapIsDroppedAndSaidApartWhileShorterOnesAreStillWritten()
      throws IOException {
    open(DeadLetterWriter::openForAppend);
    w.setMaxBytes(1024);

    giveUp("/" + "x".repeat(2000));
    giveUp("/" + "y".repeat(2000));
    giveUp("/short");

    assertThat(lines()).singleElement().asString().contains("/short");
    assertThat(w.dropped()).isEqualTo(2);
    assertThat(errors).singleElement().asString().doesNotContain("xxx");
    assertThat(errors.get(0))
        .startsWith("retry-agent: a dead letter of ")
        .endsWith(
            " bytes is larger than agent.deadLetter.maxBytes (1KiB) for "
                + file
                + "; such dead letters are dropped, not written");
  }

  @Test
  void aReloadChangesTheCapForTheNextLine() throws IOException {
    open(DeadLetterWriter::openForAppend);
    giveUp("/1");
    long line = Files.size(file);

    w.setMaxBytes(line); // lowered: the next line (as long as the first) no longer fits
    giveUp("/d");
    w.setMaxBytes(2 * line); // raised: the episode ends, said once
    giveUp("/2");
    w.setMaxBytes(0); // removed: no limit
    giveUp("/3");
    giveUp("/4");

    assertThat(lines()).hasSize(4);
    assertThat(w.dropped()).isEqualTo(1);
    assertThat(errors).containsExactly(reached(line), below(2 * line));
  }
}
