package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.ClassBytes;
import dev.retryagent.agent.tooling.ClassBytes.Out;
import dev.retryagent.agent.tooling.ClassBytes.PoolAdditions;

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
    ClassBytes c = ClassBytes.read(in);
    if (c == null) {
      return null;
    }
    pos = c.poolEnd;
    pos += 2; // access
    int thisClass = u2();
    pos += 2; // super
    int interfaces = u2();
    pos += 2 * interfaces;
    pos = c.skipMembers(pos); // fields
    int methods = u2();
    for (int i = 0; i < methods; i++) {
      int access = u2();
      int name = u2();
      int desc = u2();
      int attributes = u2();
      boolean target =
          (access & 0x0008) == 0 && c.isUtf8(name, METHOD) && c.isUtf8(desc, DESCRIPTOR);
      for (int a = 0; a < attributes; a++) {
        int attributeStart = pos;
        int attributeName = u2();
        int length = u4();
        if (target && c.isUtf8(attributeName, "Code")) {
          return replaceCode(c, thisClass, attributeStart, length);
        }
        pos += length;
      }
    }
    return null;
  }

  /**
   * Checks the Code attribute at {@code start} and writes the class file with the new body, the
   * exception table, {@code max_locals} 4, a StackMapTable, and the added constant pool entries.
   */
  private byte[] replaceCode(ClassBytes c, int thisClass, int start, int length) {
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
      if (!c.isUtf8(name, "LineNumberTable")
          && !c.isUtf8(name, "LocalVariableTable")
          && !c.isUtf8(name, "LocalVariableTypeTable")) {
        return null; // a StackMapTable or anything else we would have to merge
      }
      pos += len;
    }
    int subEnd = pos;

    // The constant pool entries we add, numbered from the class's own count.
    PoolAdditions pool = new PoolAdditions(c.poolCount);
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
      boolean variables = !c.isUtf8(name, "LineNumberTable");
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

    Out out = new Out(in.length + pool.out.size + body.size + 16);
    out.bytes(in, 0, 8).u2(pool.poolCount());
    out.bytes(in, 10, c.poolEnd - 10).bytes(pool.out.buf, 0, pool.out.size);
    out.bytes(in, c.poolEnd, start + 2 - c.poolEnd); // up to the Code attribute's length
    out.u4(body.size).bytes(body.buf, 0, body.size);
    int after = start + 6 + length;
    out.bytes(in, after, in.length - after);
    return out.toArray();
  }
}
