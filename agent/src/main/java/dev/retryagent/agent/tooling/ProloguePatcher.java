package dev.retryagent.agent.tooling;

import dev.retryagent.agent.tooling.ClassBytes.Out;
import dev.retryagent.agent.tooling.ClassBytes.PoolAdditions;
import java.util.List;

/**
 * Writes the agent's hooks into a class file without ASM: {@link BridgePrologue}'s prologue, and
 * the simpler calls to {@code RetryAgentBridge.tell}, as the same instructions, frames and
 * handlers, patched into the bytes. Why: the hooked classes are rewritten as the application first
 * uses its client (the JDK's {@code HttpClientFacade} when it builds its first {@code HttpClient},
 * OkHttp's builder when it builds its first {@code OkHttpClient}, the JDK's {@code HttpClient} at
 * the first {@code HttpURLConnection} connect), often before or just after {@code main}, and
 * reading and writing them with ASM loads ~29 of ASM's classes and runs them interpreted (~10-15
 * ms, issue 13).
 *
 * <p>What it writes, per {@link Target}:
 *
 * <ul>
 *   <li>a take-over prologue ({@link BridgePrologue}) or a {@code tell} at the very start of a
 *       method: the method's code shifts as a whole, so every branch inside it (relative) stays as
 *       it is; what refers to absolute offsets is fixed up: the exception table, the stack map's
 *       first frame and its {@code Uninitialized} entries (the offset of a {@code new}), the line
 *       and local variable tables. The prologue is padded with {@code nop}s to a multiple of four
 *       bytes, so that a {@code tableswitch} keeps its alignment;
 *   <li>with {@link Target#tellAndOnIoException}, also a handler after the method's last
 *       instruction, over all of its code, that tells of an {@code IOException} (with the argument)
 *       and throws it on;
 *   <li>a {@code tell} before a constructor returns ({@link Target#tellBeforeReturn}), when its
 *       only {@code return} is its last instruction (nothing after it moves);
 *   <li>a {@code boolean} field of {@code this} set from the bridge's answer, first in a method, in
 *       a try of its own ({@link Target#setBooleanField}: the JDK's {@code HttpClient}).
 * </ul>
 *
 * <p>Everything else is copied byte for byte; the constant pool gets the entries the hooks need
 * appended (duplicates of existing ones are legal). Anything this class does not know how to handle
 * (a type annotation on an instruction, an unknown attribute of the code or instruction, a method
 * too large, a constructor with more than one {@code return}) makes {@link #patch} return null, and
 * the caller uses ASM instead: this is a fast path, never the only one.
 */
public final class ProloguePatcher {
  /** A method to hook, and how. */
  public static final class Target {
    /** In {@link #argumentSlots}: the instance field {@link #withField} names, of {@code this}. */
    public static final int THIS_FIELD = -2;

    // What a target writes. Numbers, not an enum: one class fewer (and no enum initialiser) to load
    // as the application builds its first client.
    private static final int TAKE_OVER = 0;
    private static final int TELL = 1;
    private static final int TELL_AND_ON_IO_EXCEPTION = 2;
    private static final int TELL_BEFORE_RETURN = 3;
    private static final int SET_BOOLEAN_FIELD = 4;

    final int kind;
    final String name;
    final String desc; // null: every method of that name (the constructors)
    final int hook;
    final int[] argumentSlots;
    final String returnType;
    final int failedHook;
    final String fieldName;
    final String fieldDesc;

    /** With {@link #desc} null for a method: what its descriptor starts and ends with. */
    final String descStart;

    final String descEnd;

    /**
     * A take-over prologue ({@link BridgePrologue}): the bridge's {@code enter} gets the arguments,
     * and the method returns what it delivers, or runs as it was.
     *
     * @param name the method's name
     * @param desc its descriptor
     * @param hook the hook's number ({@link Bridge})
     * @param argumentSlots the local variable of each {@code Object} the bridge gets, in order
     *     ({@code 0}: {@code this}), {@code -1} for {@code null}, or {@link #THIS_FIELD}; 1 to
     *     {@value BridgePrologue#MAX_ARGUMENTS}
     * @param returnType internal name of the method's return type (a reference type), or null for
     *     {@code void}
     */
    public Target(String name, String desc, int hook, int[] argumentSlots, String returnType) {
      this(TAKE_OVER, name, desc, hook, argumentSlots, returnType, -1, null, null, null, null);
      if (argumentSlots.length < 1 || argumentSlots.length > BridgePrologue.MAX_ARGUMENTS) {
        throw new IllegalArgumentException(argumentSlots.length + " arguments");
      }
    }

    private Target(
        int kind,
        String name,
        String desc,
        int hook,
        int[] argumentSlots,
        String returnType,
        int failedHook,
        String fieldName,
        String fieldDesc,
        String descStart,
        String descEnd) {
      checkHook(hook);
      if (failedHook != -1) {
        checkHook(failedHook);
      }
      this.kind = kind;
      this.name = name;
      this.desc = desc;
      this.hook = hook;
      this.argumentSlots = argumentSlots.clone();
      this.returnType = returnType;
      this.failedHook = failedHook;
      this.fieldName = fieldName;
      this.fieldDesc = fieldDesc;
      this.descStart = descStart;
      this.descEnd = descEnd;
    }

    private static void checkHook(int hook) {
      if (hook < 0 || hook >= Bridge.HOOKS) {
        throw new IllegalArgumentException("hook number " + hook);
      }
    }

    /** {@code RetryAgentBridge.tell(hook, <local slot>)} first in an instance method. */
    public static Target tell(String name, String desc, int hook, int slot) {
      return new Target(TELL, name, desc, hook, new int[] {slot}, null, -1, null, null, null, null);
    }

    /**
     * {@link #tell} first, and {@code tell(failedHook, new Object[] {<local slot>, exception})}
     * before an {@code IOException} leaves the method: a handler over all of its code, after its
     * own (each of those still catches first). The handler's frame holds {@code this} and the
     * argument in {@code slot}, which must be 1 (the first parameter, a reference); a method that
     * stores into either, or whose own frames do not hold both, is left to ASM.
     */
    public static Target tellAndOnIoException(
        String name, String desc, int hook, int slot, int failedHook) {
      return new Target(
          TELL_AND_ON_IO_EXCEPTION,
          name,
          desc,
          hook,
          new int[] {slot},
          null,
          failedHook,
          null,
          null,
          null,
          null);
    }

    /**
     * {@code RetryAgentBridge.tell(hook, this)} before every constructor of the class returns,
     * where {@code this} is initialised; at least one constructor.
     */
    public static Target tellBeforeReturn(int hook) {
      return new Target(
          TELL_BEFORE_RETURN,
          "<init>",
          null,
          hook,
          new int[] {0},
          null,
          -1,
          null,
          null,
          null,
          null);
    }

    /**
     * This take-over with {@link #THIS_FIELD} standing for {@code this.<name>} (an instance field
     * of the patched class, of type {@code desc}, which the caller has checked is there).
     */
    public Target withField(String name, String desc) {
      return new Target(
          kind,
          this.name,
          this.desc,
          hook,
          argumentSlots,
          returnType,
          failedHook,
          name,
          desc,
          descStart,
          descEnd);
    }

    /**
     * {@code try { this.<field> = ((Boolean)
     * Objects.requireNonNullElse(RetryAgentBridge.enter(hook, this, Boolean.valueOf(this.<field>)),
     * Boolean.valueOf(this.<field>))).booleanValue(); } catch (Throwable t) {}} first in the one
     * instance method {@code name} whose descriptor starts with {@code descStart} and ends with
     * {@code descEnd} (its middle differs between JDKs): the bridge's answer, when it gives one,
     * sets {@code boolean} field {@code field} of {@code this}; nothing of the agent's side can
     * break the method.
     */
    public static Target setBooleanField(
        String name, String descStart, String descEnd, int hook, String field) {
      return new Target(
          SET_BOOLEAN_FIELD,
          name,
          null,
          hook,
          new int[] {0},
          null,
          -1,
          field,
          "Z",
          descStart,
          descEnd);
    }

    boolean matches(ClassBytes c, int nameIndex, int descIndex) {
      if (!c.isUtf8(nameIndex, name)) {
        return false;
      }
      if (desc != null) {
        return c.isUtf8(descIndex, desc);
      }
      return descStart == null || c.isUtf8StartingAndEnding(descIndex, descStart, descEnd);
    }
  }

  // Opcodes
  private static final int NOP = 0x00;
  private static final int ACONST_NULL = 0x01;
  private static final int ICONST_0 = 0x03;
  private static final int BIPUSH = 0x10;
  private static final int ALOAD = 0x19;
  private static final int ALOAD_0 = 0x2a;
  private static final int ISTORE = 0x36;
  private static final int ASTORE = 0x3a;
  private static final int ISTORE_0 = 0x3b;
  private static final int ASTORE_3 = 0x4e;
  private static final int POP = 0x57;
  private static final int DUP = 0x59;
  private static final int DUP_X1 = 0x5a;
  private static final int SWAP = 0x5f;
  private static final int AASTORE = 0x53;
  private static final int ANEWARRAY = 0xbd;
  private static final int GOTO = 0xa7;
  private static final int ARETURN = 0xb0;
  private static final int RETURN = 0xb1;
  private static final int GETFIELD = 0xb4;
  private static final int PUTFIELD = 0xb5;
  private static final int INVOKEVIRTUAL = 0xb6;
  private static final int INVOKESTATIC = 0xb8;
  private static final int ATHROW = 0xbf;
  private static final int CHECKCAST = 0xc0;
  private static final int WIDE = 0xc4;
  private static final int IFNULL = 0xc6;
  private static final int TABLESWITCH = 0xaa;
  private static final int LOOKUPSWITCH = 0xab;
  private static final int JSR = 0xa8;
  private static final int RET = 0xa9;
  private static final int JSR_W = 0xc9;

  // Stack map frame types, and the verification types with an operand
  private static final int SAME_LOCALS_1_STACK_ITEM = 64;
  private static final int SAME_LOCALS_1_STACK_ITEM_EXTENDED = 247;
  private static final int SAME_FRAME_EXTENDED = 251;
  private static final int FULL_FRAME = 255;
  private static final int ITEM_OBJECT = 7;
  private static final int ITEM_UNINITIALIZED = 8;

  /**
   * The newest class file version patched here (JDK 25's): a newer one may hold what this patcher
   * does not know to shift, and goes to ASM, which refuses what it cannot read.
   */
  static final int NEWEST_MAJOR_VERSION = 69;

  private ProloguePatcher() {}

  /**
   * {@code classfile} with the hook of each of {@code targets}, or null if a target is missing or
   * the class holds something this patcher does not handle (then use ASM).
   */
  public static byte[] patch(byte[] classfile, List<Target> targets) {
    try {
      return new Patch(classfile, targets).run();
    } catch (Unhandled | IndexOutOfBoundsException e) {
      return null;
    }
  }

  /** Something the patcher leaves to ASM. */
  private static final class Unhandled extends Exception {
    Unhandled(String why) {
      super(why, null, false, false);
    }
  }

  private static final class Patch {
    private final ClassBytes c;
    private final byte[] in;
    private final List<Target> targets;
    private final PoolAdditions pool;

    Patch(byte[] classfile, List<Target> targets) throws Unhandled {
      this.c = ClassBytes.read(classfile);
      if (c == null) {
        throw new Unhandled("not a class file this patcher reads");
      }
      this.in = classfile;
      this.targets = targets;
      this.pool = new PoolAdditions(c.poolCount);
    }

    byte[] run() throws Unhandled {
      if (c.u2(6) > NEWEST_MAJOR_VERSION) {
        throw new Unhandled("a class file newer than this patcher knows");
      }
      int pos = c.poolEnd + 6; // access, this, super
      pos += 2 + 2 * c.u2(pos); // interfaces
      int methodsStart = c.skipMembers(pos); // after the fields
      Out rest = new Out(in.length + 256);
      boolean[] found = new boolean[targets.size()];
      int count = c.u2(methodsStart);
      pos = methodsStart + 2;
      rest.u2(count);
      for (int m = 0; m < count; m++) {
        int start = pos;
        Target t = targetOf(c.u2(pos + 2), c.u2(pos + 4));
        int access = c.u2(start);
        int attributes = c.u2(pos + 6);
        pos = c.skipAttributes(pos + 6);
        if (t == null) {
          rest.bytes(in, start, pos - start);
          continue;
        }
        int i = targets.indexOf(t);
        // twice (but the constructors), static or native
        if (found[i] && t.kind != Target.TELL_BEFORE_RETURN || (access & 0x0108) != 0) {
          throw new Unhandled("unexpected method");
        }
        found[i] = true;
        rest.bytes(in, start, 8);
        int a = start + 8;
        boolean code = false;
        for (int k = 0; k < attributes; k++) {
          int length = c.u4(a + 2);
          if (c.isUtf8(c.u2(a), "Code")) {
            writeCode(rest, a, t);
            code = true;
          } else {
            rest.bytes(in, a, 6 + length);
          }
          a += 6 + length;
        }
        if (!code) {
          throw new Unhandled("abstract method");
        }
      }
      for (boolean f : found) {
        if (!f) {
          throw new Unhandled("a target method is missing");
        }
      }
      rest.bytes(in, pos, in.length - pos); // the class's attributes
      if (pool.poolCount() > 0xFFFF) {
        throw new Unhandled("constant pool too large");
      }
      Out out = new Out(in.length + pool.out.size + rest.size);
      out.bytes(in, 0, 8).u2(pool.poolCount());
      out.bytes(in, 10, c.poolEnd - 10).bytes(pool.out.buf, 0, pool.out.size);
      out.bytes(in, c.poolEnd, methodsStart - c.poolEnd);
      out.bytes(rest.buf, 0, rest.size);
      return out.toArray();
    }

    private Target targetOf(int nameIndex, int descIndex) {
      for (Target t : targets) {
        if (t.matches(c, nameIndex, descIndex)) {
          return t;
        }
      }
      return null;
    }

    /** The method's code with its hook. */
    private void writeCode(Out out, int attribute, Target t) throws Unhandled {
      int pos = attribute + 6;
      int maxStack = c.u2(pos);
      int maxLocals = c.u2(pos + 2);
      int codeLength = c.u4(pos + 4);
      int codeStart = pos + 8;
      int tablePos = codeStart + codeLength;
      int handlers = c.u2(tablePos);
      int attributesPos = tablePos + 2 + 8 * handlers;

      Layout l = new Layout(t, codeStart, codeLength);
      if (l.codeLength > 0xFFFF) {
        throw new Unhandled("method too large");
      }

      Out body = new Out(l.codeLength + 256);
      body.u2(Math.max(maxStack + l.extraStack, l.minStack)).u2(maxLocals);
      body.u4(l.codeLength).bytes(l.prologue.buf, 0, l.prologue.size);
      if (l.insertAt < 0) {
        body.bytes(in, codeStart, codeLength);
      } else {
        body.bytes(in, codeStart, l.insertAt);
        body.bytes(l.inserted.buf, 0, l.inserted.size);
        body.bytes(in, codeStart + l.insertAt, codeLength - l.insertAt);
      }
      body.bytes(l.handler.buf, 0, l.handler.size);

      // the prologues in a try of their own: the take-over and the field's
      boolean takeOver = t.kind == Target.TAKE_OVER || t.kind == Target.SET_BOOLEAN_FIELD;
      boolean onIoException = t.kind == Target.TELL_AND_ON_IO_EXCEPTION;
      body.u2(handlers + (takeOver || onIoException ? 1 : 0));
      if (takeOver) {
        // Ours first: its range is the prologue alone, which no other entry covers.
        body.u2(0).u2(l.tryEnd).u2(l.failed).u2(pool.classEntry("java/lang/Throwable"));
      }
      for (int h = 0; h < handlers; h++) {
        int e = tablePos + 2 + 8 * h;
        int from = c.u2(e);
        int handler = c.u2(e + 4);
        if (l.insertAt >= 0 && (from >= l.insertAt || handler >= l.insertAt)) {
          throw new Unhandled("a handler at the constructor's return");
        }
        body.u2(l.moved(from)).u2(l.moved(c.u2(e + 2))).u2(l.moved(handler)).u2(c.u2(e + 6));
      }
      if (onIoException) {
        // Last: each of the method's own handlers still catches first.
        int shift = l.prologue.size;
        body.u2(shift).u2(shift + codeLength).u2(l.handlerAt);
        body.u2(pool.classEntry("java/io/IOException"));
      }

      int attributes = c.u2(attributesPos);
      int a = attributesPos + 2;
      boolean stackMap = false;
      Out attrs = new Out(256);
      for (int k = 0; k < attributes; k++) {
        int nameIndex = c.u2(a);
        int length = c.u4(a + 2);
        if (c.isUtf8(nameIndex, "StackMapTable")) {
          stackMap = true;
          writeStackMap(attrs, nameIndex, a, l);
        } else if (c.isUtf8(nameIndex, "LineNumberTable")) {
          writeMoved(attrs, a, 4, l, false);
        } else if (c.isUtf8(nameIndex, "LocalVariableTable")
            || c.isUtf8(nameIndex, "LocalVariableTypeTable")) {
          writeMoved(attrs, a, 10, l, true);
        } else {
          throw new Unhandled("code attribute with offsets this patcher does not know");
        }
        a += 6 + length;
      }
      if (!stackMap && (takeOver || onIoException)) { // ours need frames
        writeStackMap(attrs, pool.utf8("StackMapTable"), -1, l);
        attributes++;
      }
      body.u2(attributes).bytes(attrs.buf, 0, attrs.size);

      out.u2(c.u2(attribute)).u4(body.size).bytes(body.buf, 0, body.size);
    }

    /**
     * The table attribute at {@code attribute}, of entries {@code entrySize} bytes long that each
     * start with a code offset, and, with {@code ranges}, a length after it: both moved with the
     * code.
     */
    private void writeMoved(Out out, int attribute, int entrySize, Layout l, boolean ranges)
        throws Unhandled {
      int entries = c.u2(attribute + 6);
      if (2 + entries * entrySize != c.u4(attribute + 2)) {
        throw new Unhandled("malformed table");
      }
      out.bytes(in, attribute, 8);
      for (int e = 0; e < entries; e++) {
        int at = attribute + 8 + e * entrySize;
        int from = c.u2(at);
        out.u2(l.moved(from));
        if (ranges) {
          out.u2(l.moved(from + c.u2(at + 2)) - l.moved(from)).bytes(in, at + 4, entrySize - 4);
        } else {
          out.bytes(in, at + 2, entrySize - 2);
        }
      }
    }

    /**
     * The take-over prologue's three frames, then the method's own from its {@code StackMapTable}
     * at {@code attribute} (-1: it had none), then the frame of an {@code IOException} handler
     * after the code. Each frame's offset is relative to the one before, so only the first frame's
     * changes; but a frame can hold an object between its {@code new} and its constructor ({@code
     * Uninitialized}), named by the absolute offset of that {@code new}, which moves with the code:
     * every frame is read, and those offsets are moved. (Code inserted before a constructor's last
     * instruction moves no frame: none can come after it.)
     */
    private void writeStackMap(Out out, int nameIndex, int attribute, Layout l) throws Unhandled {
      Out frames = new Out(64);
      int previous = -1;
      int entries = 0;
      if (l.t.kind == Target.TAKE_OVER) {
        previous = sameLocalsOneItem(frames, previous, l.notTaken, "java/lang/Object");
        entries++;
      }
      if (l.t.kind == Target.TAKE_OVER || l.t.kind == Target.SET_BOOLEAN_FIELD) {
        previous = sameLocalsOneItem(frames, previous, l.failed, "java/lang/Throwable");
        previous = same(frames, previous, l.original);
        entries += 2;
      }
      int shift = l.prologue.size;
      if (attribute >= 0) {
        int count = c.u2(attribute + 6);
        entries += count;
        int f = attribute + 8;
        int end = attribute + 6 + c.u4(attribute + 2);
        int offset = -1; // the method's own frames', before the move
        // The handler's frame holds this and the argument over the whole method: so must each of
        // the method's own frames (the entries of its locals, the implicit first frame's two)
        int locals = l.t.kind == Target.TELL_AND_ON_IO_EXCEPTION ? 2 : -1;
        for (int i = 0; i < count; i++) {
          int type = c.u1(f);
          int at = f + 1;
          int delta;
          if (type < 128) { // same_frame, same_locals_1_stack_item
            delta = type < SAME_LOCALS_1_STACK_ITEM ? type : type - SAME_LOCALS_1_STACK_ITEM;
          } else if (type >= SAME_LOCALS_1_STACK_ITEM_EXTENDED) { // with an explicit offset_delta
            delta = c.u2(at);
            at += 2;
          } else {
            throw new Unhandled("reserved frame type");
          }
          if (locals >= 0) {
            locals = Instructions.localsKeepingArguments(c, type, at, locals, l.argumentName);
          }
          offset += delta + 1;
          if (l.insertAt >= 0 && offset > l.insertAt) {
            throw new Unhandled("a frame after the constructor's return");
          }
          if (i == 0) {
            // The first frame's offset was `delta`; now it is delta + the prologue's length,
            // after ours.
            writeFirstFrameHeader(frames, type, delta + shift - previous - 1);
          } else {
            frames.bytes(in, f, at - f);
          }
          if (type >= SAME_LOCALS_1_STACK_ITEM && type < 128
              || type == SAME_LOCALS_1_STACK_ITEM_EXTENDED) {
            at = copyVerificationType(frames, at, shift);
          } else if (type > SAME_FRAME_EXTENDED && type < FULL_FRAME) { // append_frame
            for (int k = SAME_FRAME_EXTENDED; k < type; k++) {
              at = copyVerificationType(frames, at, shift);
            }
          } else if (type == FULL_FRAME) {
            for (int list = 0; list < 2; list++) { // the locals, then the stack
              int items = c.u2(at);
              frames.u2(items);
              at += 2;
              for (int k = 0; k < items; k++) {
                at = copyVerificationType(frames, at, shift);
              }
            }
          }
          f = at;
        }
        if (f != end) {
          throw new Unhandled("malformed stack map");
        }
        if (count > 0) {
          previous = offset + shift;
        }
      }
      if (l.t.kind == Target.TELL_AND_ON_IO_EXCEPTION) {
        // full_frame: locals this and the argument, the exception on the stack
        frames.u1(FULL_FRAME).u2(l.handlerAt - previous - 1);
        frames.u2(2).u1(ITEM_OBJECT).u2(c.thisClass()).u1(ITEM_OBJECT).u2(l.argumentClass);
        frames.u2(1).u1(ITEM_OBJECT).u2(pool.classEntry("java/io/IOException"));
        entries++;
      }
      if (entries > 0xFFFF) {
        throw new Unhandled("too many frames");
      }
      out.u2(nameIndex).u4(2 + frames.size).u2(entries).bytes(frames.buf, 0, frames.size);
    }

    /** The type and offset of the method's first frame, {@code moved} after our last one. */
    private void writeFirstFrameHeader(Out frames, int type, int moved) {
      if (type < 128 && moved <= 63) {
        frames.u1(type < SAME_LOCALS_1_STACK_ITEM ? moved : SAME_LOCALS_1_STACK_ITEM + moved);
      } else {
        int extended =
            type < SAME_LOCALS_1_STACK_ITEM
                ? SAME_FRAME_EXTENDED
                : type < 128 ? SAME_LOCALS_1_STACK_ITEM_EXTENDED : type;
        frames.u1(extended).u2(moved);
      }
    }

    /**
     * Copies the verification type at {@code at}, an {@code Uninitialized} one's offset moved by
     * {@code shift}; returns where the next one starts.
     */
    private int copyVerificationType(Out frames, int at, int shift) throws Unhandled {
      int tag = c.u1(at);
      if (tag == ITEM_UNINITIALIZED) {
        frames.u1(tag).u2(c.u2(at + 1) + shift);
        return at + 3;
      }
      if (tag == ITEM_OBJECT) {
        frames.bytes(in, at, 3);
        return at + 3;
      }
      if (tag < ITEM_OBJECT) { // top, int, float, double, long, null, uninitializedThis
        frames.u1(tag);
        return at + 1;
      }
      throw new Unhandled("unknown verification type " + tag);
    }

    private static int same(Out frames, int previous, int offset) {
      int delta = offset - previous - 1;
      if (delta <= 63) {
        frames.u1(delta);
      } else {
        frames.u1(SAME_FRAME_EXTENDED).u2(delta);
      }
      return offset;
    }

    private int sameLocalsOneItem(Out frames, int previous, int offset, String stackItem) {
      int delta = offset - previous - 1;
      if (delta <= 63) {
        frames.u1(SAME_LOCALS_1_STACK_ITEM + delta);
      } else {
        frames.u1(SAME_LOCALS_1_STACK_ITEM_EXTENDED).u2(delta);
      }
      frames.u1(ITEM_OBJECT).u2(pool.classEntry(stackItem));
      return offset;
    }

    /** {@code RetryAgentBridge.tell(hook, <local slot>)}. */
    private void tell(Out code, int hook, int slot) throws Unhandled {
      pushHook(code, hook);
      load(code, slot);
      int bridge = pool.classEntry(BridgePrologue.BRIDGE);
      code.u1(INVOKESTATIC).u2(pool.methodRef(bridge, "tell", "(ILjava/lang/Object;)V"));
    }

    /**
     * With the exception on the stack (and left there): {@code RetryAgentBridge.tell(hook, new
     * Object[] {<local slot>, exception})}, by stack operations only (no local is stored).
     */
    private void tellWithException(Out code, int hook, int slot) throws Unhandled {
      code.u1(DUP); // e e
      pushHook(code, hook); // e e h
      code.u1(SWAP); // e h e
      code.u1(ICONST_0 + 2).u1(ANEWARRAY).u2(pool.classEntry("java/lang/Object")); // e h e a
      code.u1(DUP_X1); // e h a e a
      code.u1(SWAP); // e h a a e
      code.u1(ICONST_0 + 1); // e h a a e 1
      code.u1(SWAP); // e h a a 1 e
      code.u1(AASTORE); // e h a
      code.u1(DUP); // e h a a
      code.u1(ICONST_0); // e h a a 0
      load(code, slot); // e h a a 0 arg
      code.u1(AASTORE); // e h a
      int bridge = pool.classEntry(BridgePrologue.BRIDGE);
      code.u1(INVOKESTATIC).u2(pool.methodRef(bridge, "tell", "(ILjava/lang/Object;)V")); // e
    }

    private static void pushHook(Out code, int hook) {
      if (hook <= 5) {
        code.u1(ICONST_0 + hook);
      } else {
        code.u1(BIPUSH).u1(hook);
      }
    }

    private static void load(Out code, int slot) throws Unhandled {
      if (slot <= 3) {
        code.u1(ALOAD_0 + slot);
      } else if (slot <= 0xFF) {
        code.u1(ALOAD).u1(slot);
      } else {
        throw new Unhandled("wide local");
      }
    }

    /**
     * Where the hook's code goes in one method, and how the method's own offsets move: a prologue
     * shifts them all; code inserted before a constructor's last instruction moves only that
     * instruction (and the ends of ranges that hold it).
     */
    private final class Layout {
      final Target t;
      final Out prologue = new Out(32);
      final Out inserted = new Out(16);
      final Out handler = new Out(16);

      /** Where {@link #inserted} goes in the original code, or -1. */
      int insertAt = -1;

      int codeLength;
      int extraStack;
      int minStack;
      int handlerAt;
      int argumentClass;
      String argumentName; // its internal name
      // the take-over prologue's labels
      int tryEnd;
      int notTaken;
      int failed;
      int original;

      Layout(Target t, int codeStart, int originalLength) throws Unhandled {
        this.t = t;
        if (t.kind == Target.TAKE_OVER) {
          takeOver();
          minStack = Math.max(2, t.argumentSlots.length + 1);
        } else if (t.kind == Target.SET_BOOLEAN_FIELD) {
          setBooleanField();
          minStack = 4; // this (for the putfield), the hook's number, this, the field's value
        } else if (t.kind == Target.TELL) {
          tell(prologue, t.hook, t.argumentSlots[0]);
          pad();
          minStack = 2;
        } else if (t.kind == Target.TELL_AND_ON_IO_EXCEPTION) {
          if (t.argumentSlots[0] != 1) {
            throw new Unhandled("the handler's frame holds this and the first parameter");
          }
          argumentClass = firstParameterClass(t.desc);
          argumentName = t.desc.substring(2, t.desc.indexOf(';'));
          Instructions.checkNoStores(c, codeStart, originalLength, t.argumentSlots[0]);
          tell(prologue, t.hook, t.argumentSlots[0]);
          pad();
          handlerAt = prologue.size + originalLength;
          tellWithException(handler, t.failedHook, t.argumentSlots[0]);
          handler.u1(ATHROW);
          // the exception, the hook's number, the array and its copy, the index and the element
          minStack = 6;
        } else {
          insertAt = Instructions.onlyReturnAtTheEnd(c, codeStart, originalLength);
          tell(inserted, t.hook, 0);
          extraStack = 2; // whatever the stack holds at the return, and the tell's two values
        }
        codeLength = prologue.size + originalLength + inserted.size + handler.size;
      }

      /**
       * Where an offset of the original code goes: after the prologue; past the code inserted
       * before the constructor's return when it is beyond that return. The return's own offset
       * stays, so a branch to it, its frame and its line now start at the inserted code; the code's
       * end moves, so a range that held the return holds the inserted code too.
       */
      int moved(int offset) {
        return prologue.size
            + (insertAt >= 0 && offset > insertAt ? offset + inserted.size : offset);
      }

      /** NOPs to a multiple of four bytes, so that a {@code tableswitch} keeps its alignment. */
      private void pad() {
        while (prologue.size % 4 != 0) {
          prologue.u1(NOP);
        }
      }

      /** The field's prologue (see {@link Target#setBooleanField}). */
      private void setBooleanField() {
        Out code = prologue;
        int field = pool.fieldRef(c.thisClass(), t.fieldName, "Z");
        int bool = pool.classEntry("java/lang/Boolean");
        int valueOf = pool.methodRef(bool, "valueOf", "(Z)Ljava/lang/Boolean;");
        int bridge = pool.classEntry(BridgePrologue.BRIDGE);
        code.u1(ALOAD_0); // for the putfield
        pushHook(code, t.hook);
        code.u1(ALOAD_0);
        code.u1(ALOAD_0).u1(GETFIELD).u2(field).u1(INVOKESTATIC).u2(valueOf);
        code.u1(INVOKESTATIC);
        code.u2(
            pool.methodRef(
                bridge, "enter", "(ILjava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;"));
        code.u1(ALOAD_0).u1(GETFIELD).u2(field).u1(INVOKESTATIC).u2(valueOf);
        code.u1(INVOKESTATIC);
        code.u2(
            pool.methodRef(
                pool.classEntry("java/util/Objects"),
                "requireNonNullElse",
                "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;"));
        code.u1(CHECKCAST).u2(bool);
        code.u1(INVOKEVIRTUAL).u2(pool.methodRef(bool, "booleanValue", "()Z"));
        code.u1(PUTFIELD).u2(field);
        tryEnd = code.size;
        endTry(code);
      }

      /**
       * After a prologue's try: a jump over the handler to the original code, the handler (which
       * drops what was thrown), and {@code nop}s to a multiple of four bytes.
       */
      private void endTry(Out code) {
        int jump = code.size;
        code.u1(GOTO).u2(0); // to original, below
        failed = code.size;
        code.u1(POP);
        original = code.size;
        do {
          // keeps a frame of the original code at its first instruction from sharing our offset,
          // and a tableswitch's padding as it was
          code.u1(NOP);
        } while (code.size % 4 != 0);
        code.put2(jump + 1, original - jump);
      }

      private void takeOver() throws Unhandled {
        Out code = prologue;
        pushHook(code, t.hook);
        StringBuilder enterDesc = new StringBuilder("(I");
        for (int slot : t.argumentSlots) {
          if (slot == -1) {
            code.u1(ACONST_NULL);
          } else if (slot == Target.THIS_FIELD) {
            if (t.fieldName == null) {
              throw new Unhandled("no field named");
            }
            code.u1(ALOAD_0).u1(GETFIELD);
            code.u2(pool.fieldRef(c.thisClass(), t.fieldName, t.fieldDesc));
          } else if (slot >= 0) {
            load(code, slot);
          } else {
            throw new Unhandled("argument " + slot);
          }
          enterDesc.append("Ljava/lang/Object;");
        }
        enterDesc.append(")Ljava/lang/Object;");
        int bridge = pool.classEntry(BridgePrologue.BRIDGE);
        code.u1(INVOKESTATIC).u2(pool.methodRef(bridge, "enter", enterDesc.toString()));
        tryEnd = code.size;
        code.u1(DUP);
        int ifNull = code.size;
        code.u1(IFNULL).u2(0); // to notTaken, below
        code.u1(INVOKESTATIC);
        code.u2(pool.methodRef(bridge, "deliver", "(Ljava/lang/Object;)Ljava/lang/Object;"));
        if (t.returnType == null) {
          code.u1(POP).u1(RETURN);
        } else {
          code.u1(CHECKCAST).u2(pool.classEntry(t.returnType)).u1(ARETURN);
        }
        notTaken = code.size;
        code.u1(POP);
        endTry(code);
        code.put2(ifNull + 1, notTaken - ifNull);
      }

      /** The pool entry of the class of the method's first parameter, a reference. */
      private int firstParameterClass(String desc) throws Unhandled {
        if (desc == null || !desc.startsWith("(L")) {
          throw new Unhandled("the first parameter is not an object");
        }
        int semicolon = desc.indexOf(';');
        return pool.classEntry(desc.substring(2, semicolon));
      }
    }
  }

  /**
   * A walk over a method's instructions, for the hooks that must know them (a constructor's
   * returns, a method's stores). A class of its own: the take-over prologue, all that the JDK's
   * facade needs, never loads it.
   */
  private static final class Instructions {
    private Instructions() {}

    /** The offset of the code's only {@code return}, its last instruction. */
    static int onlyReturnAtTheEnd(ClassBytes c, int codeStart, int length) throws Unhandled {
      int returns = 0;
      int last = -1;
      for (int i = 0; i < length; i += instructionLength(c, codeStart, i)) {
        last = i;
        if (c.u1(codeStart + i) == RETURN) {
          returns++;
        }
      }
      if (returns != 1 || c.u1(codeStart + last) != RETURN) {
        throw new Unhandled("a constructor whose only return is not its last instruction");
      }
      return last;
    }

    /** Refuses code that stores into any local from 0 to {@code slot}. */
    static void checkNoStores(ClassBytes c, int codeStart, int length, int slot) throws Unhandled {
      for (int i = 0; i < length; i += instructionLength(c, codeStart, i)) {
        int op = c.u1(codeStart + i);
        boolean wide = op == WIDE;
        if (wide) {
          op = c.u1(codeStart + i + 1);
        }
        int local; // the first of the one or two locals written
        if (op >= ISTORE && op <= ASTORE) {
          local = wide ? c.u2(codeStart + i + 2) : c.u1(codeStart + i + 1);
        } else if (op >= ISTORE_0 && op <= ASTORE_3) {
          local = (op - ISTORE_0) % 4;
        } else {
          continue;
        }
        if (local <= slot) {
          throw new Unhandled("the method stores into a local its handler's frame holds");
        }
      }
    }

    /**
     * How many entries the locals of the stack map frame of {@code type} hold, given {@code locals}
     * for the frame before it: {@code at} is where the frame's entries start, after its offset.
     * Refuses a frame whose locals do not hold {@code this} in entry 0 and {@code argument} in
     * entry 1, as the handler's frame does: a frame that marks either unused (top, or chopped off,
     * as a preverifier that trims dead locals writes it, with no store) fails verification against
     * the handler's, and so every call. Entries, not slots: a long is one entry; a frame that holds
     * one in entry 0 or 1 is refused too.
     */
    static int localsKeepingArguments(ClassBytes c, int type, int at, int locals, String argument)
        throws Unhandled {
      if (type > SAME_FRAME_EXTENDED - 4 && type < SAME_FRAME_EXTENDED) { // chop_frame
        locals -= SAME_FRAME_EXTENDED - type;
      } else if (type > SAME_FRAME_EXTENDED && type < FULL_FRAME) { // append_frame
        locals += type - SAME_FRAME_EXTENDED;
      } else if (type == FULL_FRAME) {
        locals = c.u2(at);
        if (locals >= 2
            && (c.u1(at + 2) != ITEM_OBJECT
                || !c.isSameClass(c.u2(at + 3), c.thisClass())
                || c.u1(at + 5) != ITEM_OBJECT
                || !c.isClass(c.u2(at + 6), argument))) {
          throw new Unhandled("a frame that does not hold this and the argument");
        }
      }
      if (locals < 2) {
        throw new Unhandled("a frame that drops this or the argument");
      }
      return locals;
    }

    /** The length of the instruction at {@code i} of the code at {@code codeStart}. */
    private static int instructionLength(ClassBytes c, int codeStart, int i) throws Unhandled {
      int op = c.u1(codeStart + i);
      if (op == TABLESWITCH || op == LOOKUPSWITCH) {
        int p = i + 1 + (3 - (i % 4)); // the operands start four-aligned
        if (op == TABLESWITCH) {
          int low = c.u4(codeStart + p + 4);
          int high = c.u4(codeStart + p + 8);
          return p - i + 12 + 4 * (high - low + 1);
        }
        return p - i + 8 + 8 * c.u4(codeStart + p + 4);
      }
      if (op == WIDE) {
        return c.u1(codeStart + i + 1) == 0x84 ? 6 : 4; // iinc, or a load, store or ret
      }
      if (op == JSR || op == RET || op == JSR_W) {
        throw new Unhandled("a subroutine");
      }
      if (op >= LENGTHS.length) {
        throw new Unhandled("opcode " + op);
      }
      return LENGTHS[op];
    }

    /** Each opcode's length in bytes (without the variable ones: the switches and wide). */
    private static final byte[] LENGTHS = lengths();

    private static byte[] lengths() {
      byte[] l = new byte[0xca];
      java.util.Arrays.fill(l, (byte) 1);
      l[0x10] = 2; // bipush
      l[0x11] = 3; // sipush
      l[0x12] = 2; // ldc
      l[0x13] = 3; // ldc_w
      l[0x14] = 3; // ldc2_w
      for (int op = 0x15; op <= 0x19; op++) {
        l[op] = 2; // iload .. aload
      }
      for (int op = 0x36; op <= 0x3a; op++) {
        l[op] = 2; // istore .. astore
      }
      l[0x84] = 3; // iinc
      for (int op = 0x99; op <= 0xa8; op++) {
        l[op] = 3; // if*, goto, jsr
      }
      l[0xa9] = 2; // ret
      for (int op = 0xb2; op <= 0xb8; op++) {
        l[op] = 3; // get/put field/static, invokevirtual/special/static
      }
      l[0xb9] = 5; // invokeinterface
      l[0xba] = 5; // invokedynamic
      l[0xbb] = 3; // new
      l[0xbc] = 2; // newarray
      l[0xbd] = 3; // anewarray
      l[0xc0] = 3; // checkcast
      l[0xc1] = 3; // instanceof
      l[0xc5] = 4; // multianewarray
      l[0xc6] = 3; // ifnull
      l[0xc7] = 3; // ifnonnull
      l[0xc8] = 5; // goto_w
      l[0xc9] = 5; // jsr_w
      return l;
    }
  }
}
