package dev.retryagent.internal.observe;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A file channel that writes the first {@code okBytes} bytes to the real file, then fails every
 * write as a full disk does; with a gate, each write first waits for a permit of it (a disk that is
 * slow for as long as the test wants).
 */
class FailingChannel extends FileChannel {
  private final FileChannel real;
  private final Semaphore gate;
  private volatile int okBytes;
  // The line breaks in the write waiting at the gate or last past it: the lines of its batch.
  volatile int linesInWrite;

  /** From now on, {@code bytes} more are written before the disk is full. */
  void okBytes(int bytes) {
    okBytes = bytes;
  }

  FailingChannel(FileChannel real, int okBytes) {
    this(real, okBytes, null);
  }

  FailingChannel(FileChannel real, int okBytes, Semaphore gate) {
    this.real = real;
    this.okBytes = okBytes;
    this.gate = gate;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    if (gate != null) {
      int lines = 0;
      for (int i = src.position(); i < src.limit(); i++) {
        lines += src.get(i) == '\n' ? 1 : 0;
      }
      linesInWrite = lines;
      try {
        if (!gate.tryAcquire(30, TimeUnit.SECONDS)) {
          throw new IOException("the test never opened the gate");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException();
      }
    }
    if (okBytes <= 0) {
      throw new IOException("No space left on device");
    }
    ByteBuffer part = src.duplicate();
    part.limit(part.position() + Math.min(okBytes, src.remaining()));
    int n = real.write(part);
    src.position(src.position() + n);
    okBytes -= n;
    return n;
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    return real.read(dst);
  }

  @Override
  public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
    return real.read(dsts, offset, length);
  }

  @Override
  public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
    throw new IOException("No space left on device");
  }

  @Override
  public long position() throws IOException {
    return real.position();
  }

  @Override
  public FileChannel position(long newPosition) throws IOException {
    real.position(newPosition);
    return this;
  }

  @Override
  public long size() throws IOException {
    return real.size();
  }

  @Override
  public FileChannel truncate(long size) throws IOException {
    real.truncate(size);
    return this;
  }

  @Override
  public void force(boolean metaData) throws IOException {
    real.force(metaData);
  }

  @Override
  public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
    return real.transferTo(position, count, target);
  }

  @Override
  public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
    throw new IOException("No space left on device");
  }

  @Override
  public int read(ByteBuffer dst, long position) throws IOException {
    return real.read(dst, position);
  }

  @Override
  public int write(ByteBuffer src, long position) throws IOException {
    throw new IOException("No space left on device");
  }

  @Override
  public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
    return real.map(mode, position, size);
  }

  @Override
  public FileLock lock(long position, long size, boolean shared) throws IOException {
    return real.lock(position, size, shared);
  }

  @Override
  public FileLock tryLock(long position, long size, boolean shared) throws IOException {
    return real.tryLock(position, size, shared);
  }

  @Override
  protected void implCloseChannel() throws IOException {
    real.close();
  }
}
