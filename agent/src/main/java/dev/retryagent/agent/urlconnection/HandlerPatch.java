package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.tooling.Bridge;
import java.nio.charset.StandardCharsets;

/**
 * Rewrites {@code openConnection(URL, Proxy)} of the JDK's http and https protocol handlers by
 * editing the class file directly, without ASM, so that the JDK loading a handler (which it does
 * for any {@code http:} URL object, JCE's start-up included) costs well under a millisecond and
 * loads no other class of the agent.
 *
 * <p>The method is {@code return new XConnection(u, p, this);} on JDK 11 to 25 (11 bytes). It
 * becomes, in Java terms:
 *
 * <pre>{@code
 * URLConnection c = (URLConnection) new XConnection(u, p, this);
 * try {
 *   return (URLConnection) Objects.requireNonNullElse(RetryAgentBridge.enter(URL_OPENED, c, p), c);
 * } catch (Throwable t) {
 *   return c;
 * }
 * }</pre>
 *
 * The cast keeps the verifier (JDK 25 verifies changed boot classes) from loading the connection
 * class to prove it a {@code URLConnection}. The agent answers the facade, or {@code null} for the
 * JDK's own connection (before the hook is activated at the first connection, for its own attempts,
 * with the client switched off); the {@code try} makes any failure harmless: the JDK's own
 * connection goes back. Any other shape of the method: {@link #patch} returns null and the caller
 * uses ASM.
 */
final class HandlerPatch {
  static final String METHOD = "openConnection";
  static final String DESCRIPTOR = "(Ljava/net/URL;Ljava/net/Proxy;)Ljava/net/URLConnection;";

  /** The original body: new #C; dup; aload_1; aload_2; aload_0; invokespecial #M; areturn. */
  private static final int[] SHAPE = {0xbb, -1, -1, 0x59, 0x2b, 0x2c, 0x2a, 0xb7, -1, -1, 0xb0};

  private static final int CODE_LENGTH = 32;
  private static final int TRY_START = 14;
  private static final int HANDLER_PC = 29;

  private final byte[] in;
  private int pos;

  private HandlerPatch(byte[] classfile) {
    this.in = classfile;
  }

  /** The patched class file, or null when the method is not the expected one (use ASM then). */
  static byte[] patch(byte[] classfile) {
    try {
      return new HandlerPatch(classfile).rewrite();
    } catch (RuntimeException unexpected) {
      return null; // a truncated or unusual class file: the caller's fallback decides
    }
  }

  private int u1() {
    return in[pos++] & 0xff;
  }

  private int u2() {
    int v = ((in[pos] & 0xff) << 8) | (in[pos + 1] & 0xff);
    pos += 2;
    return v;
  }

  private int u4() {
    int v = (u2() << 16) | u2();
    return v;
  }

  private byte[] rewrite() {
    pos = 8;
    int cpCount = u2();
    int[] entry = new int[cpCount];
    for (int i = 1; i < cpCount; i++) {
      entry[i] = pos;
      int tag = u1();
      if (tag == 1) {
        int length = u2();
        pos += length;
      } else if (tag == 5 || tag == 6) {
        pos += 8;
        i++; // takes two slots
      } else if (tag == 7 || tag == 8 || tag == 16 || tag == 19 || tag == 20) {
        pos += 2;
      } else if (tag == 15) {
        pos += 3;
      } else if (tag == 3 || tag == 4 || (tag >= 9 && tag <= 12) || tag == 17 || tag == 18) {
        pos += 4;
      } else {
        return null;
      }
    }
    int cpEnd = pos;
    pos += 2; // access
    int thisClass = u2();
    pos += 2; // super
    int interfaces = u2();
    pos += 2 * interfaces;
    int fields = u2();
    for (int i = 0; i < fields; i++) {
      pos += 6;
      skipAttributes();
    }
    int methods = u2();
    for (int i = 0; i < methods; i++) {
      int access = u2();
      int name = u2();
      int desc = u2();
      int attributes = u2();
      boolean target =
          (access & 0x0008) == 0 && utf8(entry, name, METHOD) && utf8(entry, desc, DESCRIPTOR);
      for (int a = 0; a < attributes; a++) {
        int attributeStart = pos;
        int attributeName = u2();
        int length = u4();
        if (target && utf8(entry, attributeName, "Code")) {
          return replaceCode(entry, cpCount, cpEnd, thisClass, attributeStart, length);
        }
        pos += length;
      }
    }
    return null;
  }

  private void skipAttributes() {
    int attributes = u2();
    for (int a = 0; a < attributes; a++) {
      pos += 2;
      int length = u4();
      pos += length;
    }
  }

  private boolean utf8(int[] entry, int index, String expected) {
    int at = entry[index];
    if (in[at] != 1) {
      return false;
    }
    int length = ((in[at + 1] & 0xff) << 8) | (in[at + 2] & 0xff);
    byte[] want = expected.getBytes(StandardCharsets.UTF_8);
    if (length != want.length) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      if (in[at + 3 + i] != want[i]) {
        return false;
      }
    }
    return true;
  }

  /**
   * Checks the Code attribute at {@code start} and writes the class file with the new body, the
   * exception table, {@code max_locals} 4, a StackMapTable, and the added constant pool entries.
   */
  private byte[] replaceCode(
      int[] entry, int cpCount, int cpEnd, int thisClass, int start, int length) {
    pos = start + 6;
    int maxStack = u2();
    int maxLocals = u2();
    int codeLength = u4();
    int codeStart = pos;
    if (codeLength != SHAPE.length || maxLocals != 3) {
      return null;
    }
    for (int i = 0; i < SHAPE.length; i++) {
      if (SHAPE[i] >= 0 && (in[codeStart + i] & 0xff) != SHAPE[i]) {
        return null;
      }
    }
    pos = codeStart + codeLength;
    if (u2() != 0) {
      return null; // an exception table: not the method we know
    }
    int subAttributes = u2();
    int subStart = pos;
    for (int a = 0; a < subAttributes; a++) {
      int name = u2();
      int len = u4();
      if (!utf8(entry, name, "LineNumberTable")
          && !utf8(entry, name, "LocalVariableTable")
          && !utf8(entry, name, "LocalVariableTypeTable")) {
        return null; // a StackMapTable or anything else we would have to merge
      }
      pos += len;
    }
    int subEnd = pos;

    // The constant pool entries we add, numbered from cpCount.
    Pool pool = new Pool(cpCount);
    int bridge = pool.classEntry("java/lang/RetryAgentBridge");
    int objects = pool.classEntry(UrlHooks.OBJECTS);
    int urlConnection = pool.classEntry("java/net/URLConnection");
    int throwable = pool.classEntry("java/lang/Throwable");
    int url = pool.classEntry("java/net/URL");
    int proxy = pool.classEntry("java/net/Proxy");
    int enter = pool.methodRef(bridge, "enter", UrlHooks.ENTER_2);
    int orElse = pool.methodRef(objects, UrlHooks.OR_ELSE, UrlHooks.OR_ELSE_DESC);
    int stackMapTable = pool.utf8("StackMapTable");

    Out code = new Out(CODE_LENGTH);
    code.bytes(in, codeStart, 10); // new; dup; aload_1; aload_2; aload_0; invokespecial
    code.u1(0xc0).u2(urlConnection); // checkcast URLConnection
    code.u1(0x4e); // astore_3
    code.u1(0x10).u1(Bridge.URL_OPENED); // 14: bipush URL_OPENED
    code.u1(0x2d); // aload_3
    code.u1(0x2c); // aload_2
    code.u1(0xb8).u2(enter); // invokestatic RetryAgentBridge.enter
    code.u1(0x2d); // aload_3
    code.u1(0xb8).u2(orElse); // invokestatic Objects.requireNonNullElse
    code.u1(0xc0).u2(urlConnection); // checkcast URLConnection
    code.u1(0xb0); // 28: areturn
    code.u1(0x57); // 29: pop (the handler)
    code.u1(0x2d); // aload_3
    code.u1(0xb0); // areturn
    if (code.size != CODE_LENGTH) {
      throw new IllegalStateException("the new body is " + code.size + " bytes"); // a bug: ASM
    }

    Out frames = new Out(32);
    frames.u2(1); // one frame
    frames.u1(255).u2(HANDLER_PC).u2(4); // full_frame at the handler, 4 locals
    frames.u1(7).u2(thisClass).u1(7).u2(url).u1(7).u2(proxy).u1(7).u2(urlConnection);
    frames.u2(1).u1(7).u2(throwable); // stack: the Throwable

    Out body = new Out(length + 64);
    body.u2(Math.max(maxStack, 5)).u2(4).u4(CODE_LENGTH).bytes(code.buf, 0, code.size);
    body.u2(1).u2(TRY_START).u2(HANDLER_PC).u2(HANDLER_PC).u2(throwable); // try [14, 29) -> 29
    body.u2(subAttributes + 1);
    // Line and variable tables: a range that ran to the old end runs to the new end.
    pos = subStart;
    while (pos < subEnd) {
      int name = u2();
      int len = u4();
      body.u2(name).u4(len);
      boolean variables = !utf8(entry, name, "LineNumberTable");
      int tableEnd = pos + len;
      int count = u2();
      body.u2(count);
      for (int i = 0; i < count; i++) {
        if (variables) {
          int from = u2();
          int span = u2();
          body.u2(from).u2(from + span == codeLength ? CODE_LENGTH - from : span);
          body.bytes(in, pos, 6);
          pos += 6;
        } else {
          body.bytes(in, pos, 4);
          pos += 4;
        }
      }
      pos = tableEnd;
    }
    body.u2(stackMapTable).u4(frames.size).bytes(frames.buf, 0, frames.size);

    Out out = new Out(in.length + pool.size() + body.size + 16);
    out.bytes(in, 0, 8).u2(cpCount + pool.count);
    out.bytes(in, 10, cpEnd - 10).bytes(pool.out.buf, 0, pool.out.size);
    out.bytes(in, cpEnd, start + 2 - cpEnd); // up to the Code attribute's length
    out.u4(body.size).bytes(body.buf, 0, body.size);
    int after = start + 6 + length;
    out.bytes(in, after, in.length - after);
    return out.toArray();
  }

  /** Constant pool entries appended after the class's own. */
  private static final class Pool {
    final Out out = new Out(256);
    final int first;
    int count;

    Pool(int first) {
      this.first = first;
    }

    int size() {
      return out.size;
    }

    private int next() {
      return first + count++;
    }

    int utf8(String s) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      out.u1(1).u2(b.length).bytes(b, 0, b.length);
      return next();
    }

    int classEntry(String internalName) {
      int name = utf8(internalName);
      out.u1(7).u2(name);
      return next();
    }

    int methodRef(int owner, String name, String descriptor) {
      int n = utf8(name);
      int d = utf8(descriptor);
      out.u1(12).u2(n).u2(d);
      int nameAndType = next();
      out.u1(10).u2(owner).u2(nameAndType);
      return next();
    }
  }

  /** A growing byte buffer (no DataOutputStream: on JDK 25 it loads VarHandle classes). */
  private static final class Out {
    byte[] buf;
    int size;

    Out(int capacity) {
      buf = new byte[Math.max(16, capacity)];
    }

    private void room(int n) {
      if (size + n > buf.length) {
        byte[] bigger = new byte[Math.max(buf.length * 2, size + n)];
        System.arraycopy(buf, 0, bigger, 0, size);
        buf = bigger;
      }
    }

    Out u1(int v) {
      room(1);
      buf[size++] = (byte) v;
      return this;
    }

    Out u2(int v) {
      room(2);
      buf[size++] = (byte) (v >>> 8);
      buf[size++] = (byte) v;
      return this;
    }

    Out u4(int v) {
      return u2(v >>> 16).u2(v & 0xffff);
    }

    Out bytes(byte[] b, int from, int n) {
      room(n);
      System.arraycopy(b, from, buf, size, n);
      size += n;
      return this;
    }

    byte[] toArray() {
      byte[] a = new byte[size];
      System.arraycopy(buf, 0, a, 0, size);
      return a;
    }
  }
}
