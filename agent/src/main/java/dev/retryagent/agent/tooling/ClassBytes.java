package dev.retryagent.agent.tooling;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * A class file read by hand, for the hooks patched into its bytes without ASM ({@link
 * ProloguePatcher}, the url-connection handlers' {@code HandlerPatch}): where each constant pool
 * entry starts, and what both need to read, compare and write. Without ASM because these classes
 * are rewritten at start-up, where loading and running ASM interpreted costs milliseconds (issue
 * 13). Nothing here allocates per byte, and it loads no class the JVM had not loaded already.
 */
public final class ClassBytes {
  /** The class file. */
  public final byte[] in;

  /** {@code constant_pool_count}: the pool's entries are numbered 1 to this, exclusive. */
  public final int poolCount;

  /** The offset of the first byte after the constant pool ({@code access_flags}). */
  public final int poolEnd;

  private final int[] entries;

  private ClassBytes(byte[] in, int poolCount, int poolEnd, int[] entries) {
    this.in = in;
    this.poolCount = poolCount;
    this.poolEnd = poolEnd;
    this.entries = entries;
  }

  /**
   * Reads the constant pool of {@code classfile}; null if it is not a class file or holds an entry
   * of a kind this reader does not know (a newer class file: the caller uses ASM then).
   *
   * @throws IndexOutOfBoundsException for a truncated class file
   */
  public static ClassBytes read(byte[] classfile) {
    if (classfile.length < 10 || u4(classfile, 0) != 0xCAFEBABE) {
      return null;
    }
    int count = u2(classfile, 8);
    int[] entries = new int[count];
    int pos = 10;
    for (int i = 1; i < count; i++) {
      entries[i] = pos;
      int tag = classfile[pos] & 0xFF;
      if (tag == 1) { // Utf8
        pos += 3 + u2(classfile, pos + 1);
      } else if (tag == 5 || tag == 6) { // Long, Double: two slots
        pos += 9;
        i++;
      } else if (tag == 7 || tag == 8 || tag == 16 || tag == 19 || tag == 20) {
        pos += 3; // Class, String, MethodType, Module, Package
      } else if (tag == 15) { // MethodHandle
        pos += 4;
      } else if (tag == 3 || tag == 4 || (tag >= 9 && tag <= 12) || tag == 17 || tag == 18) {
        pos += 5; // Integer, Float, the refs, NameAndType, Dynamic, InvokeDynamic
      } else {
        return null;
      }
    }
    return new ClassBytes(classfile, count, pos, entries);
  }

  public int u1(int at) {
    return in[at] & 0xFF;
  }

  public int u2(int at) {
    return u2(in, at);
  }

  public int u4(int at) {
    return u4(in, at);
  }

  private static int u2(byte[] b, int at) {
    return ((b[at] & 0xFF) << 8) | (b[at + 1] & 0xFF);
  }

  private static int u4(byte[] b, int at) {
    return (u2(b, at) << 16) | u2(b, at + 2);
  }

  /** Whether entry {@code index} is the Utf8 {@code expected} (ASCII: names and descriptors). */
  public boolean isUtf8(int index, String expected) {
    if (index <= 0 || index >= poolCount) {
      return false;
    }
    int at = entries[index];
    int length = expected.length();
    if (in[at] != 1 || u2(at + 1) != length) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      if (in[at + 3 + i] != (byte) expected.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  /** Whether pool entry {@code index} is a UTF-8 string that starts and ends as given (ASCII). */
  public boolean isUtf8StartingAndEnding(int index, String start, String end) {
    if (index <= 0 || index >= poolCount || in[entries[index]] != 1) {
      return false;
    }
    int at = entries[index];
    int length = u2(at + 1);
    if (length < start.length() + end.length()) {
      return false;
    }
    for (int i = 0; i < start.length(); i++) {
      if (in[at + 3 + i] != (byte) start.charAt(i)) {
        return false;
      }
    }
    int from = at + 3 + length - end.length();
    for (int i = 0; i < end.length(); i++) {
      if (in[from + i] != (byte) end.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  /** The offset after the attributes whose count is at {@code at}. */
  public int skipAttributes(int at) {
    int count = u2(at);
    int pos = at + 2;
    for (int a = 0; a < count; a++) {
      pos += 6 + u4(pos + 2);
    }
    return pos;
  }

  /** Whether entry {@code index} is a {@code Class} named {@code internalName} (ASCII). */
  public boolean isClass(int index, String internalName) {
    return index > 0
        && index < poolCount
        && in[entries[index]] == 7
        && isUtf8(u2(entries[index] + 1), internalName);
  }

  /** Whether entries {@code a} and {@code b} are {@code Class} entries of one name. */
  public boolean isSameClass(int a, int b) {
    if (a <= 0 || a >= poolCount || b <= 0 || b >= poolCount) {
      return false;
    }
    if (a == b) {
      return in[entries[a]] == 7;
    }
    if (in[entries[a]] != 7 || in[entries[b]] != 7) {
      return false;
    }
    int x = entries[u2(entries[a] + 1)];
    int y = entries[u2(entries[b] + 1)];
    int length = u2(x + 1);
    if (in[x] != 1 || in[y] != 1 || u2(y + 1) != length) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      if (in[x + 3 + i] != in[y + 3 + i]) {
        return false;
      }
    }
    return true;
  }

  /** The pool index of the class's own class entry ({@code this_class}). */
  public int thisClass() {
    return u2(poolEnd + 2);
  }

  /** Whether the class declares an instance field {@code name} of type {@code descriptor}. */
  public boolean hasInstanceField(String name, String descriptor) {
    int pos = poolEnd + 6; // access, this, super
    pos += 2 + 2 * u2(pos); // interfaces
    int count = u2(pos);
    pos += 2;
    for (int f = 0; f < count; f++) {
      if ((u2(pos) & 0x0008) == 0 && isUtf8(u2(pos + 2), name) && isUtf8(u2(pos + 4), descriptor)) {
        return true;
      }
      pos = skipAttributes(pos + 6);
    }
    return false;
  }

  /** The offset after the fields or methods whose count is at {@code at}. */
  public int skipMembers(int at) {
    int count = u2(at);
    int pos = at + 2;
    for (int m = 0; m < count; m++) {
      pos = skipAttributes(pos + 6);
    }
    return pos;
  }

  /**
   * Constant pool entries appended after a class's own, numbered from its {@code
   * constant_pool_count}; an entry asked for twice is written once.
   */
  public static final class PoolAdditions {
    /** The entries' bytes, in order. */
    public final Out out = new Out(256);

    private final int first;
    private final Map<String, Integer> written = new HashMap<>();
    private int count;

    public PoolAdditions(int first) {
      this.first = first;
    }

    /** The new {@code constant_pool_count}. */
    public int poolCount() {
      return first + count;
    }

    public int utf8(String s) {
      Integer known = written.get("U" + s);
      if (known != null) {
        return known;
      }
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      out.u1(1).u2(b.length).bytes(b, 0, b.length);
      return next("U" + s);
    }

    public int classEntry(String internalName) {
      Integer known = written.get("C" + internalName);
      if (known != null) {
        return known;
      }
      int name = utf8(internalName);
      out.u1(7).u2(name);
      return next("C" + internalName);
    }

    /** A {@code Methodref} of class entry {@code owner}. */
    public int methodRef(int owner, String name, String descriptor) {
      return memberRef(10, owner, name, descriptor);
    }

    /** A {@code Fieldref} of class entry {@code owner}. */
    public int fieldRef(int owner, String name, String descriptor) {
      return memberRef(9, owner, name, descriptor);
    }

    private int memberRef(int tag, int owner, String name, String descriptor) {
      String key = tag + "R" + owner + "." + name + descriptor;
      Integer known = written.get(key);
      if (known != null) {
        return known;
      }
      Integer nameAndType = written.get("N" + name + descriptor);
      if (nameAndType == null) {
        int n = utf8(name);
        int d = utf8(descriptor);
        out.u1(12).u2(n).u2(d);
        nameAndType = next("N" + name + descriptor);
      }
      out.u1(tag).u2(owner).u2(nameAndType);
      return next(key);
    }

    private int next(String key) {
      int index = first + count++;
      written.put(key, index);
      return index;
    }
  }

  /** A growing byte buffer (no DataOutputStream: on JDK 25 it loads VarHandle classes). */
  public static final class Out {
    public byte[] buf;
    public int size;

    public Out(int capacity) {
      buf = new byte[Math.max(16, capacity)];
    }

    private void room(int n) {
      if (size + n > buf.length) {
        byte[] bigger = new byte[Math.max(buf.length * 2, size + n)];
        System.arraycopy(buf, 0, bigger, 0, size);
        buf = bigger;
      }
    }

    public Out u1(int v) {
      room(1);
      buf[size++] = (byte) v;
      return this;
    }

    public Out u2(int v) {
      room(2);
      buf[size++] = (byte) (v >>> 8);
      buf[size++] = (byte) v;
      return this;
    }

    public Out u4(int v) {
      return u2(v >>> 16).u2(v & 0xffff);
    }

    public Out bytes(byte[] b, int from, int n) {
      room(n);
      System.arraycopy(b, from, buf, size, n);
      size += n;
      return this;
    }

    /** Writes {@code v} as two bytes at {@code at}, over what is there. */
    public void put2(int at, int v) {
      buf[at] = (byte) (v >>> 8);
      buf[at + 1] = (byte) v;
    }

    public byte[] toArray() {
      byte[] a = new byte[size];
      System.arraycopy(buf, 0, a, 0, size);
      return a;
    }
  }
}
