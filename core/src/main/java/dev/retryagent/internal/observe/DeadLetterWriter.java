package dev.retryagent.internal.observe;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.internal.AgentThreads;
import dev.retryagent.internal.Units;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * {@code agent.deadLetter.path}: one JSON line ({@link DeadLetterJson}) per call that gave up,
 * appended to a file.
 *
 * <p>The caller's thread only formats the line and offers it to a bounded queue; one daemon thread
 * ({@code retry-agent-dead-letters}, started at the first dead letter, with the system class loader
 * as its context class loader, see {@link AgentThreads}) opens the file (creating its parent
 * directories, and the file readable by its owner only) and appends whole lines, so lines from many
 * threads never interleave. The queue holds at most {@link #DEFAULT_CAPACITY} lines and {@link
 * #MAX_HELD_BYTES} of heap, the lines being written included. A full queue, an unwritable path, a
 * full disk or any write error never reaches the call: the line is dropped and counted ({@link
 * #dropped()}, and in the agent's metrics when given: {@code
 * retryagent_dead_letters_dropped_total}, JMX {@code DeadLettersDropped}), and each kind of failure
 * is reported once on the error sink; a full queue once per episode, when it starts and when the
 * writer thread has caught up. After a failed write the file is opened again for the next lines,
 * and a partly written line is ended so the next line stays whole; so is a torn last line found in
 * the file when it is opened (a JVM killed in the middle of a write): a reader loses that line
 * only. A file rotated away (renamed or removed) is created again at the path for the next lines.
 *
 * <p>With a size cap ({@link #setMaxBytes}, {@code agent.deadLetter.maxBytes}) a line that would
 * take the file past it is not written, whole (never a part of it), and is counted as dropped; the
 * error sink is told once when lines start being dropped so and once when the file has shrunk
 * (rotated: renamed away, removed or truncated) and they are written again. The writer thread keeps
 * the file's size as it appends, and re-reads it only where it already looks at the file: when it
 * opens it, and in the rotation check before each batch (which reads the file's attributes at the
 * path anyway). A give-up's thread does nothing more for it.
 *
 * <p>Every give-up counts, in both modes, whatever its reason (the {@code reason} field tells them
 * apart, {@code cancelled} included). A call observe mode would have retried is not a dead letter:
 * the agent did not give up on it. Lines from several JVMs appending to one file are not
 * coordinated. {@link #close()} (from the agent's shutdown hook) writes what is queued.
 */
public final class DeadLetterWriter implements RetryListener, AutoCloseable {
  /** Lines that may wait for the writer thread; past this, lines are dropped. */
  public static final int DEFAULT_CAPACITY = 10_000;

  /**
   * Heap, in bytes, that lines waiting for the writer thread or being written may hold, whatever
   * the number of lines: a path has no length limit, and while the disk is slow the lines are the
   * application's heap. Past this, lines are dropped as with a full queue. A line counts {@link
   * #heapBytes its most} from the give-up that queued it until its write has ended, so a batch held
   * up in a slow write counts too. Ordinary lines (up to about 380 characters) reach the line count
   * first.
   */
  public static final long MAX_HELD_BYTES = 8L * 1024 * 1024;

  private static final int BATCH = 512;
  // Counted bytes a batch takes (but one line, whatever its size): bounds the writer thread's
  // encoded copy of the lines it writes at once.
  private static final long BATCH_BYTES = 64 * 1024;
  // A String's object and array headers, and the queue's slot for it.
  private static final int LINE_OVERHEAD = 64;
  // Compared by identity: ends the writer thread.
  private static final String STOP = new String("stop");
  // rw------- : the owner reads and writes, nobody else sees the file.
  private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY =
      PosixFilePermissions.asFileAttribute(
          EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));

  /** Opens the file for appending; replaced in tests to simulate a broken disk. */
  interface Opener {
    FileChannel open(Path path) throws IOException;
  }

  /** Starts the writer thread; replaced in tests to simulate a JVM out of threads. */
  interface Starter {
    void start(Thread thread);
  }

  private final Path path;
  // As lines show it: a URL written as the path without its password (AgentConfig.shownPath).
  private final String shownPath;
  private final ErrorReporter errors;
  private final Opener opener;
  private final Starter starter;
  // Also counts every dropped line, for the exporters; null: none.
  private final RetryMetrics metrics;
  private final BlockingQueue<String> queue;
  private final LongAdder written = new LongAdder();
  private final LongAdder dropped = new LongAdder();
  // heapBytes of the lines queued or being written (MAX_HELD_BYTES).
  private final AtomicLong heldBytes = new AtomicLong();
  // A full-queue episode: from the first line dropped for a full queue to the writer thread's
  // next look at an empty queue after a write; said once when it starts and once when it ends.
  private final AtomicBoolean full = new AtomicBoolean();
  private final LongAdder droppedWhileFull = new LongAdder();
  private final AtomicBoolean started = new AtomicBoolean();
  // Orders the thread's start, close and the thread's end: a thread starts only while open, so a
  // close that finds none knows none will come, and a give-up that finds the thread not finished
  // knows its last drain is still to come. Written under it, read anywhere.
  private final Object lifecycle = new Object();
  private volatile boolean closed;
  // Set by closeAtExit before closed: a line refused from then on is the JVM's end's, and said so.
  private volatile boolean exiting;
  private volatile Thread thread; // null: not started (yet, or it could not start)
  private volatile boolean finished; // the thread takes no more lines but those of its last drain
  private volatile PathMask pathMask = PathMask.NONE;
  // Lines the writer thread has taken and is writing now (at exit: they may not land).
  private volatile int writing;

  // Writer thread only.
  private FileChannel channel;
  // The identity of the file the channel has open (null: the file system gives none).
  private Object fileKey;
  // The file ends inside a line (a failed write, a torn file found at open): the next line written
  // starts with a line break.
  private boolean partialLine;
  // agent.deadLetter.maxBytes, with the file's size as this thread knows it.
  private final DeadLetterCap cap;
  // Lines of the batch being written that writeBatch has counted, written or dropped: the rest
  // are counted dropped when it throws what it does not catch (an OutOfMemoryError).
  private int accounted;

  /**
   * @param path the file to append to; opened at the first dead letter, parent directories created
   * @param errors receives one line per kind of failure (unwritable path, write error, queue full);
   *     null = stderr
   */
  public DeadLetterWriter(Path path, Consumer<String> errors) {
    this(path, errors, null);
  }

  /**
   * @param metrics also counts every line this drops ({@link
   *     RetryMetrics#countDeadLettersDropped}), for JMX and Prometheus; null: none
   */
  public DeadLetterWriter(Path path, Consumer<String> errors, RetryMetrics metrics) {
    this(path, errors, DEFAULT_CAPACITY, DeadLetterWriter::openForAppend, Thread::start, metrics);
  }

  DeadLetterWriter(Path path, Consumer<String> errors, int capacity, Opener opener) {
    this(path, errors, capacity, opener, Thread::start);
  }

  DeadLetterWriter(
      Path path, Consumer<String> errors, int capacity, Opener opener, Starter starter) {
    this(path, errors, capacity, opener, starter, null);
  }

  DeadLetterWriter(
      Path path,
      Consumer<String> errors,
      int capacity,
      Opener opener,
      Starter starter,
      RetryMetrics metrics) {
    this.path = Objects.requireNonNull(path, "path");
    this.shownPath = AgentConfig.shownPath(path.toString());
    this.errors = new ErrorReporter(errors);
    this.opener = Objects.requireNonNull(opener, "opener");
    this.starter = Objects.requireNonNull(starter, "starter");
    this.metrics = metrics;
    this.queue = new ArrayBlockingQueue<>(capacity);
    this.cap = new DeadLetterCap(shownPath, this.errors);
  }

  /**
   * Opens {@code path} for appending, creating it (and its parent directories) if needed. A file it
   * creates is readable and writable by its owner only (POSIX {@code 0600}, where the file system
   * has POSIX permissions): dead letters name hosts, paths and failures, which are nobody else's
   * business. A file that exists keeps the permissions it has.
   */
  static FileChannel openForAppend(Path path) throws IOException {
    Path parent = path.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Set<StandardOpenOption> options =
        EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
    if (path.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      return FileChannel.open(path, options, OWNER_ONLY);
    }
    return FileChannel.open(path, options);
  }

  /** Masks path segments in lines from now on ({@code agent.redact.pathSegments}). */
  public void setPathMask(PathMask mask) {
    this.pathMask = Objects.requireNonNull(mask, "mask");
  }

  /**
   * The size past which lines are not written ({@code agent.deadLetter.maxBytes}), from the next
   * line the writer thread writes; 0 or less: none (the default).
   */
  public void setMaxBytes(long bytes) {
    cap.setMax(bytes);
  }

  public Path path() {
    return path;
  }

  /** Lines appended to the file so far. */
  public long written() {
    return written.sum();
  }

  /**
   * Lines lost: queue full, file unwritable, write failed, past the size cap, or offered after
   * {@link #close()}.
   */
  public long dropped() {
    return dropped.sum();
  }

  /** Lines waiting for the writer thread. */
  public int pending() {
    return queue.size();
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    // Set once the line is queued (the writer thread, or a later drain, counts it from there) or
    // counted dropped: what throws after that (saying so, on a sink that fails with an Error) must
    // not count it again. Before, the catch below counted a queued line dropped, then the writer
    // wrote it, and a dropped one twice.
    boolean counted = false;
    try {
      if (closed) {
        counted = true;
        drop(1);
        if (exiting) {
          saidDroppedAfterExit();
        }
        return;
      }
      String line = DeadLetterJson.line(e, pathMask) + "\n";
      long bytes = heapBytes(line);
      if (bytes > MAX_HELD_BYTES) {
        counted = true;
        drop(1); // never fits, however empty the queue: not a full queue's episode
        errors.once(
            "line-over-queue",
            "retry-agent: a dead letter of "
                + line.length()
                + " characters is larger than the dead-letter queue for "
                + shownPath
                + " may hold ("
                + Units.formatSize(MAX_HELD_BYTES)
                + "); such dead letters are dropped, not written");
        return;
      }
      if (heldBytes.addAndGet(bytes) > MAX_HELD_BYTES || !queue.offer(line)) {
        heldBytes.addAndGet(-bytes);
        counted = true;
        droppedFull();
        return;
      }
      counted = true;
      if (!started.get() && started.compareAndSet(false, true)) {
        startThread();
      }
      if (closed || finished) {
        // The writer was open when this give-up looked, and closed since: its thread may have
        // written its queue and ended before this line came.
        dropIfNobodyWillWrite();
      }
    } catch (RuntimeException | Error ex) {
      // Never into the call; an OutOfMemoryError included, the line is simply not written.
      if (!counted) {
        drop(1);
      }
    }
  }

  /**
   * The most heap {@code line} holds as a Java string (2 bytes a character: a line with a character
   * past Latin-1 takes that, an ASCII one half of it), with its share of the queue.
   */
  private static long heapBytes(String line) {
    return 2L * line.length() + LINE_OVERHEAD;
  }

  /** A line dropped for a full queue: counted, and said at the start of an episode. */
  private void droppedFull() {
    drop(1);
    droppedWhileFull.increment();
    if (!full.get() && full.compareAndSet(false, true)) {
      errors.tell(
          "retry-agent: the dead-letter queue for "
              + shownPath
              + " is full ("
              + queue.size()
              + " lines waiting for the disk, at most "
              + Units.formatSize(MAX_HELD_BYTES)
              + " of heap); dead letters are dropped until the writer catches up");
    }
  }

  /**
   * Ends a full-queue episode, said once, when the writer thread finds the queue empty after a
   * write: it has caught up with the give-ups.
   */
  private void endFullIfCaughtUp() {
    if (full.get() && queue.isEmpty() && full.compareAndSet(true, false)) {
      long n = droppedWhileFull.sumThenReset();
      errors.tell(
          "retry-agent: the dead-letter queue for "
              + shownPath
              + " has room again; "
              + lines(n)
              + (n == 1 ? " was" : " were")
              + " dropped while it was full");
    }
  }

  /**
   * Counts {@code lines} lost, here and in the metrics. Never throws once counted here: a caller
   * that catches would count them again.
   */
  private void drop(long lines) {
    dropped.add(lines);
    if (metrics != null) {
      try {
        metrics.countDeadLettersDropped(lines);
      } catch (RuntimeException | Error e) {
        // Counted here (dropped()); the exporters' count misses them rather than either counting
        // them twice.
      }
    }
  }

  /**
   * Started from the first caller that gave up (never with that caller's class loader). A JVM out
   * of threads (a container's pids limit) leaves the line queued and the next give-up tries again:
   * a thread never started would leave every later line queued, never written.
   */
  private void startThread() {
    synchronized (lifecycle) {
      if (closed || thread != null) {
        return; // closed: the give-up counts its line (dropIfNobodyWillWrite)
      }
      try {
        Thread t = AgentThreads.newThread(this::run, "retry-agent-dead-letters");
        starter.start(t);
        thread = t;
      } catch (RuntimeException | Error e) {
        started.set(false);
        errors.once(
            "thread",
            "retry-agent: cannot start the dead-letter writer thread ("
                + Sanitizer.exception(e, true, null)
                + "); dead letters wait in the queue until a later one can start it");
      }
    }
  }

  /**
   * Counts what is queued as dropped when no thread will write it: none was started (and none will
   * be, once closed), or it has finished. Otherwise the thread's last drain, still to come, takes
   * the line. Every line offered is either written or counted, never left in the queue.
   */
  private void dropIfNobodyWillWrite() {
    synchronized (lifecycle) {
      if (thread != null && !finished) {
        return;
      }
    }
    if (dropQueued() > 0 && exiting) {
      saidDroppedAfterExit();
    }
  }

  /**
   * Once: a call gave up after the JVM's exit had closed this writer. Its line is not written: the
   * JVM halts when the last shutdown hook ends, without waiting for this writer's thread, and a
   * line it was writing then could be cut short; a whole line or none. Said, because the dropped
   * count it goes to is read by nobody once the JVM has ended.
   */
  private void saidDroppedAfterExit() {
    errors.once(
        "after-exit",
        "retry-agent: a call gave up after the JVM's exit had begun; its dead letter for "
            + shownPath
            + " is dropped, not written (the JVM may end in the middle of a write), and so is"
            + " any later one");
  }

  /** Takes every line out of the queue and counts it dropped; returns how many. */
  private long dropQueued() {
    List<String> left = new ArrayList<>();
    queue.drainTo(left);
    long lines = 0;
    long bytes = 0;
    for (String l : left) {
      if (l != STOP) {
        lines++;
        bytes += heapBytes(l);
      }
    }
    heldBytes.addAndGet(-bytes);
    if (lines > 0) {
      drop(lines);
    }
    return lines;
  }

  /**
   * Stops taking lines, writes those queued (waiting at most {@code timeout}) and closes the file.
   * Past the wait the writer thread still writes what was queued, then closes the file and ends.
   *
   * @return true when every queued line was handled in time
   */
  public boolean close(Duration timeout) {
    Thread t;
    synchronized (lifecycle) {
      closed = true;
      t = thread;
    }
    if (t == null) {
      // No thread, and none will start now: lines a thread that could not start left queued
      // would stay there for good.
      dropQueued();
      return true;
    }
    long ms = Math.max(1, timeout.toMillis());
    try {
      // Wakes a thread waiting for lines. A full queue needs no waking (the thread ends once it
      // has written it and sees the writer closed), and waiting for room would make the wait
      // longer than the timeout, which the exit hook shares among every writer.
      queue.offer(STOP);
      t.join(ms);
      return !t.isAlive();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * {@link #close(Duration)} for the JVM's exit: what was queued is written (within {@code
   * timeout}), and a call that gives up from now on, while other shutdown hooks run, gets no line
   * (one being written when the JVM halts could be torn) but one report on the error sink.
   *
   * @return true when every queued line was handled in time
   */
  public boolean closeAtExit(Duration timeout) {
    exiting = true;
    return close(timeout);
  }

  /**
   * True once closed and nothing is left to write: the writer thread has ended, or none was
   * started.
   */
  public boolean done() {
    Thread t = thread;
    return closed && (t == null || !t.isAlive());
  }

  /**
   * For the JVM's exit, once a {@link #close(Duration) close} has waited all it may: the lines
   * still queued are counted as dropped (the JVM halts before the writer thread could write them)
   * and reported once on the error sink, with the lines the thread is writing at that moment (a
   * hung disk: they land only if the write ends before the JVM does). The message says the time ran
   * out, not why: a hung disk and a queue too long for the time both end here.
   *
   * @param waited the time the exit waited for every writer together
   * @return the lines counted as dropped
   */
  public long abandonAtExit(Duration waited) {
    long dropped = dropQueued();
    int inWrite = writing;
    if (dropped == 0 && inWrite == 0) {
      return 0;
    }
    String ranOut = "the " + Units.formatDuration(waited) + " the agent waits at exit ran out";
    long n = dropped > 0 ? dropped : inWrite;
    errors.once(
        "exit",
        "retry-agent: at exit, "
            + lines(n)
            + " for "
            + shownPath
            + (n == 1 ? " was" : " were")
            + (dropped > 0
                ? " dropped, not written: "
                    + ranOut
                    + (inWrite == 0 ? "" : " (" + inWrite + " more being written)")
                : " still being written when " + ranOut));
    return dropped;
  }

  private static String lines(long n) {
    return n == 1 ? "1 dead letter" : n + " dead letters";
  }

  /** {@link #close(Duration)} with 2 seconds. */
  @Override
  public void close() {
    close(Duration.ofSeconds(2));
  }

  private void run() {
    boolean ended = false;
    try {
      writeUntilClosed();
      ended = true;
    } finally {
      if (!ended) {
        // Thrown outside a write (which counts its own batch): the thread is gone. Whatever is
        // queued is counted dropped, and so is any later line (dropIfNobodyWillWrite sees the
        // thread finished), rather than queued for a drain that never comes.
        synchronized (lifecycle) {
          finished = true;
        }
        dropQueued();
        closeChannel();
      }
    }
  }

  private void writeUntilClosed() {
    List<String> batch = new ArrayList<>(BATCH);
    boolean stop = false;
    while (!stop) {
      String first;
      try {
        first = queue.take();
      } catch (InterruptedException e) {
        stop = true;
        first = STOP;
      }
      if (first != STOP) {
        batch.add(first);
      }
      if (nextBatch(batch) || first == STOP) {
        stop = true;
        writeAll(batch); // lines offered while closing
      } else {
        write(batch);
      }
      if (closed && queue.isEmpty()) {
        // A close that gave up waiting (a disk slower than its wait) could not queue STOP, or
        // came before this thread started: nothing waits for more lines, so the thread ends
        // and the file is closed rather than kept open forever.
        stop = true;
      }
    }
    synchronized (lifecycle) {
      finished = true;
    }
    // A give-up that found the writer open may have queued its line since the last look; one
    // that comes after this drain sees finished and counts its line dropped itself. STOP may
    // come after the thread saw the writer closed and its queue empty.
    nextBatch(batch);
    writeAll(batch);
    closeChannel();
  }

  /**
   * Adds queued lines to {@code batch} up to {@link #BATCH} lines and {@link #BATCH_BYTES}, leaving
   * STOP out; true when it took STOP.
   */
  private boolean nextBatch(List<String> batch) {
    long bytes = 0;
    for (String l : batch) {
      bytes += heapBytes(l);
    }
    boolean stop = false;
    while (batch.size() < BATCH && (batch.isEmpty() || bytes < BATCH_BYTES)) {
      String next = queue.poll();
      if (next == null) {
        break;
      } else if (next == STOP) {
        stop = true;
      } else {
        batch.add(next);
        bytes += heapBytes(next);
      }
    }
    return stop;
  }

  /** Writes {@code batch}, then every line still queued, batch after batch. */
  private void writeAll(List<String> batch) {
    do {
      write(batch);
      nextBatch(batch);
    } while (!batch.isEmpty());
  }

  /** Writes and clears {@code lines}; they stop counting in {@link #heldBytes} once written. */
  private void write(List<String> lines) {
    if (lines.isEmpty()) {
      return;
    }
    writing = lines.size();
    accounted = 0;
    try {
      writeBatch(lines);
    } catch (RuntimeException | Error e) {
      // Not one of the file's failures, which writeBatch reports itself: an OutOfMemoryError
      // making the batch's bytes, say. The batch's lines not yet counted are dropped, and the
      // thread goes on with the next batch; had it died, every later line would have waited in
      // the queue for it, uncounted, and the file stayed open.
      drop(lines.size() - accounted);
      errors.once(
          "failed",
          "retry-agent: writing to the dead-letter file "
              + shownPath
              + " failed ("
              + Sanitizer.exception(e, true, null)
              + "); the dead letters being written were dropped");
      closeChannel();
    } finally {
      writing = 0;
      long bytes = 0;
      for (String l : lines) {
        bytes += heapBytes(l);
      }
      heldBytes.addAndGet(-bytes);
      lines.clear();
      endFullIfCaughtUp();
    }
  }

  private void writeBatch(List<String> lines) {
    if (channel != null && !stillAtPath()) {
      // Rotated away or removed: the lines go to a new file at the path; a line torn in the old
      // one stays there.
      closeChannel();
      partialLine = false;
    }
    if (channel == null) {
      Object before = fileKeyOrNull(path);
      try {
        channel = opener.open(path);
      } catch (IOException | RuntimeException e) {
        drop(lines.size());
        accounted = lines.size();
        errors.once(
            "open",
            "retry-agent: cannot open the dead-letter file "
                + shownPath
                + " ("
                + failure(e)
                + "); dead letters are dropped until it can be written");
        return;
      }
      Object after = fileKeyOrNull(path);
      // The identity of the file opened, which the channel cannot tell: the file's at the path
      // just after the open, unless a rotation replaced it in between (the path names another
      // file than just before). The one from before then, so that the next batch, finding another
      // file at the path, opens that one: the channel may hold the file renamed away, written to
      // for good (and removed or compressed at the next rotation) had its successor's identity
      // been taken for its own.
      fileKey = before == null || before.equals(after) ? after : before;
      cap.sizeIs(sizeOrZero(channel));
      partialLine = partialLine || endsInsideALine(path);
    } else if (fileKey == null && cap.max() > 0) {
      cap.sizeIs(sizeOrZero(channel)); // no rotation check read it: a copytruncate must show
    }
    if (cap.emptied()) {
      partialLine = false; // truncated (copytruncate): no torn line left to end
    }
    cap.endIfShrunk();
    ByteArrayOutputStream out = new ByteArrayOutputStream(lines.size() * 256);
    int kept = 0;
    long overCap = 0;
    // Where each kept line ends in out, and where the first starts: a write that fails part-way
    // has put the lines ending before its position in the file.
    int[] ends = new int[lines.size()];
    int firstStart = 0;
    for (String l : lines) {
      byte[] bytes = l.getBytes(StandardCharsets.UTF_8);
      int need = bytes.length + (partialLine && kept == 0 ? 1 : 0);
      if (!cap.fits(need, out.size())) {
        overCap++;
        continue;
      }
      if (partialLine && kept == 0) {
        out.write('\n');
        firstStart = 1;
      }
      out.write(bytes, 0, bytes.length);
      ends[kept++] = out.size();
    }
    if (overCap > 0) {
      drop(overCap);
      accounted += (int) overCap;
    }
    if (kept == 0) {
      return;
    }
    ByteBuffer buf = ByteBuffer.wrap(out.toByteArray());
    try {
      while (buf.hasRemaining()) {
        channel.write(buf);
      }
      partialLine = false;
      cap.appended(buf.position());
      written.add(kept);
      accounted += kept;
    } catch (IOException | RuntimeException e) {
      // A disk that filled up part-way: the lines before the position are in the file, written;
      // the one it cut and those after are dropped.
      int at = buf.position();
      int landed = 0;
      while (landed < kept && ends[landed] <= at) {
        landed++;
      }
      if (at > 0) {
        partialLine = at != (landed == 0 ? firstStart : ends[landed - 1]);
      }
      written.add(landed);
      drop(kept - landed);
      accounted += kept;
      errors.once(
          "write",
          "retry-agent: cannot write to the dead-letter file "
              + shownPath
              + " ("
              + failure(e)
              + "); dead letters are dropped until it can be written");
      closeChannel();
    }
  }

  /**
   * Why the file could not be opened or written: a {@link FileSystemException} names the files it
   * failed on (this one, or a parent directory it created) by path, each shown as the path is
   * ({@link AgentConfig#shownPath}): its message would show a URL written as the path whole, {@code
   * //} written {@code /} by the {@code Path}, which no URL redaction reads as one.
   */
  private static String failure(Throwable e) {
    if (!(e instanceof FileSystemException)) {
      return Sanitizer.exception(e, true, null);
    }
    FileSystemException f = (FileSystemException) e;
    // As FileSystemException.getMessage writes it: file[ -> other][: reason].
    String files =
        f.getFile() == null
            ? ""
            : AgentConfig.shownPath(f.getFile())
                + (f.getOtherFile() == null
                    ? ""
                    : " -> " + AgentConfig.shownPath(f.getOtherFile()));
    String reason = Sanitizer.message(f.getReason(), null);
    String text = files.isEmpty() ? reason : reason.isEmpty() ? files : files + ": " + reason;
    String name = e.getClass().getName();
    return text.isEmpty() ? name : name + ": " + text;
  }

  private static long sizeOrZero(FileChannel channel) {
    try {
      return channel.size();
    } catch (IOException | RuntimeException e) {
      return 0; // a pipe or device: nothing to measure, and nothing filling a disk either
    }
  }

  /**
   * True while {@link #path} still names the file the channel has open. A log rotation renames the
   * file (or removes it, maybe with its directory): the lines from then on belong in a new file at
   * the path, not in the renamed one, nor in a deleted one that nobody can read any more (counted
   * as written all the same).
   */
  private boolean stillAtPath() {
    if (fileKey == null) {
      return true; // no identity to compare
    }
    try {
      BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
      if (!fileKey.equals(attributes.fileKey())) {
        return false;
      }
      // The real size, read here anyway: a copytruncate shrinks it, another writer grows it.
      cap.sizeIs(attributes.size());
      return true;
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException | RuntimeException e) {
      return true; // cannot tell: keep the file that works
    }
  }

  private static Object fileKeyAt(Path path) throws IOException {
    return Files.readAttributes(path, BasicFileAttributes.class).fileKey();
  }

  private static Object fileKeyOrNull(Path path) {
    try {
      return fileKeyAt(path);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /**
   * True when the regular file at {@code path} ends without a line break: its last line was torn
   * (this or an earlier JVM was killed, or the disk filled, in the middle of a write), and the next
   * line must start on a line of its own, or both would be lost to a reader.
   */
  private static boolean endsInsideALine(Path path) {
    if (!Files.isRegularFile(path)) {
      return false; // /dev/full, a pipe: nothing to read back
    }
    try (FileChannel r = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = r.size();
      ByteBuffer last = ByteBuffer.allocate(1);
      return size > 0 && r.read(last, size - 1) == 1 && last.get(0) != '\n';
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private void closeChannel() {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException ignored) {
        // nothing more to lose
      }
      channel = null;
    }
  }
}
