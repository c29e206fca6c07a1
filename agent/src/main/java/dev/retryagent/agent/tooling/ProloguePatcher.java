package dev.retryagent.agent.tooling;

import dev.retryagent.agent.tooling.ClassBytes.Out;
import dev.retryagent.agent.tooling.ClassBytes.PoolAdditions;
import java.util.List;

/**
 * Writes {@link BridgePrologue}'s prologue into a class file without ASM: the same instructions,
 * frames and handler, patched into the bytes. Why: the JDK's {@code HttpClientFacade} is rewritten
 * when the application builds its first {@code HttpClient}, often before or just after {@code
 * main}, and reading and writing it with ASM loads ~27 of ASM's classes and runs them interpreted
 * (~10 ms of start-up, issue 13). A prologue at the very start of a method shifts the method's code
 * as a whole, so every branch inside it (relative) stays as it is; what refers to absolute offsets
 * is fixed up: the exception table, the stack map's first frame and its {@code Uninitialized}
 * entries (the offset of a {@code new}), the line and local variable tables. The prologue is padded
 * with {@code nop}s to a multiple of four bytes, so that a {@code tableswitch} keeps its alignment.
 *
 * <p>Everything else is copied byte for byte; the constant pool gets the entries the prologue needs
 * appended (duplicates of existing ones are legal). Anything this class does not know how to shift
 * (a type annotation on an instruction, an unknown attribute of the code, a method too large) makes
 * {@link #patch} return null, and the caller uses ASM ({@link BridgePrologue}) instead: this is a
 * fast path, never the only one.
 */
public final class ProloguePatcher {
  /** A method to take over, and how its prologue calls the bridge. */
  public static final class Target {
    final String name;
    final String desc;
    final int hook;
    final int[] argumentSlots;
    final String returnType;

    /**
     * @param name the method's name
     * @param desc its descriptor
     * @param hook the hook's number ({@link Bridge})
     * @param argumentSlots the local variable of each {@code Object} the bridge gets, in order
     *     ({@code 0}: {@code this}), or {@code -1} for {@code null}; 1 to {@value
     *     BridgePrologue#MAX_ARGUMENTS}
     * @param returnType internal name of the method's return type (a reference type), or null for
     *     {@code void}
     */
    public Target(String name, String desc, int hook, int[] argumentSlots, String returnType) {
      if (argumentSlots.length < 1 || argumentSlots.length > BridgePrologue.MAX_ARGUMENTS) {
        throw new IllegalArgumentException(argumentSlots.length + " arguments");
      }
      if (hook < 0 || hook >= Bridge.HOOKS) {
        throw new IllegalArgumentException("hook number " + hook);
      }
      this.name = name;
      this.desc = desc;
      this.hook = hook;
      this.argumentSlots = argumentSlots.clone();
      this.returnType = returnType;
    }
  }

  // Opcodes
  private static final int NOP = 0x00;
  private static final int ACONST_NULL = 0x01;
  private static final int ICONST_0 = 0x03;
  private static final int BIPUSH = 0x10;
  private static final int ALOAD = 0x19;
  private static final int ALOAD_0 = 0x2a;
  private static final int POP = 0x57;
  private static final int DUP = 0x59;
  private static final int GOTO = 0xa7;
  private static final int ARETURN = 0xb0;
  private static final int RETURN = 0xb1;
  private static final int INVOKESTATIC = 0xb8;
  private static final int CHECKCAST = 0xc0;
  private static final int IFNULL = 0xc6;

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
   * {@code classfile} with the prologue at the start of each of {@code targets}, or null if a
   * target is missing or the class holds something this patcher does not handle (then use ASM).
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
        int attributes = c.u2(pos + 6);
        pos = c.skipAttributes(pos + 6);
        if (t == null) {
          rest.bytes(in, start, pos - start);
          continue;
        }
        int i = targets.indexOf(t);
        if (found[i] || (c.u2(start) & 0x0108) != 0) { // twice, static or native
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
        if (c.isUtf8(nameIndex, t.name) && c.isUtf8(descIndex, t.desc)) {
          return t;
        }
      }
      return null;
    }

    /** The method's code with the prologue first. */
    private void writeCode(Out out, int attribute, Target t) throws Unhandled {
      int pos = attribute + 6;
      int maxStack = c.u2(pos);
      int maxLocals = c.u2(pos + 2);
      int codeLength = c.u4(pos + 4);
      int codeStart = pos + 8;
      int tablePos = codeStart + codeLength;
      int handlers = c.u2(tablePos);
      int attributesPos = tablePos + 2 + 8 * handlers;

      Prologue p = new Prologue(t);
      int shift = p.code.size;
      if (codeLength + shift > 0xFFFF) {
        throw new Unhandled("method too large");
      }

      Out body = new Out(codeLength + 256);
      body.u2(Math.max(maxStack, Math.max(2, t.argumentSlots.length + 1))).u2(maxLocals);
      body.u4(codeLength + shift).bytes(p.code.buf, 0, shift).bytes(in, codeStart, codeLength);
      body.u2(handlers + 1);
      // Ours first: its range is the prologue alone, which no other entry covers.
      body.u2(0).u2(p.tryEnd).u2(p.failed).u2(pool.classEntry("java/lang/Throwable"));
      for (int h = 0; h < handlers; h++) {
        int e = tablePos + 2 + 8 * h;
        body.u2(c.u2(e) + shift).u2(c.u2(e + 2) + shift).u2(c.u2(e + 4) + shift);
        body.u2(c.u2(e + 6));
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
          writeStackMap(attrs, nameIndex, a, p);
        } else if (c.isUtf8(nameIndex, "LineNumberTable")) {
          writeShifted(attrs, a, 4, shift);
        } else if (c.isUtf8(nameIndex, "LocalVariableTable")
            || c.isUtf8(nameIndex, "LocalVariableTypeTable")) {
          writeShifted(attrs, a, 10, shift);
        } else {
          throw new Unhandled("code attribute with offsets this patcher does not know");
        }
        a += 6 + length;
      }
      if (!stackMap) {
        writeStackMap(attrs, pool.utf8("StackMapTable"), -1, p);
        attributes++;
      }
      body.u2(attributes).bytes(attrs.buf, 0, attrs.size);

      out.u2(c.u2(attribute)).u4(body.size).bytes(body.buf, 0, body.size);
    }

    /**
     * The table attribute at {@code attribute}, of entries {@code entrySize} bytes long that each
     * start with a code offset: the offsets moved by {@code shift}.
     */
    private void writeShifted(Out out, int attribute, int entrySize, int shift) throws Unhandled {
      int entries = c.u2(attribute + 6);
      if (2 + entries * entrySize != c.u4(attribute + 2)) {
        throw new Unhandled("malformed table");
      }
      out.bytes(in, attribute, 8);
      for (int e = 0; e < entries; e++) {
        int at = attribute + 8 + e * entrySize;
        out.u2(c.u2(at) + shift).bytes(in, at + 2, entrySize - 2);
      }
    }

    /**
     * The prologue's three frames, then the method's own from its {@code StackMapTable} at {@code
     * attribute} (-1: it had none). Each frame's offset is relative to the one before, so only the
     * first frame's changes; but a frame can hold an object between its {@code new} and its
     * constructor ({@code Uninitialized}), named by the absolute offset of the {@code new}, which
     * moves with the code: every frame is read, and those offsets are shifted.
     */
    private void writeStackMap(Out out, int nameIndex, int attribute, Prologue p) throws Unhandled {
      Out frames = new Out(64);
      int previous = -1;
      previous = sameLocalsOneItem(frames, previous, p.notTaken, "java/lang/Object");
      previous = sameLocalsOneItem(frames, previous, p.failed, "java/lang/Throwable");
      previous = same(frames, previous, p.original);
      int shift = p.code.size;
      int entries = 3;
      if (attribute >= 0) {
        int count = c.u2(attribute + 6);
        entries += count;
        int f = attribute + 8;
        int end = attribute + 6 + c.u4(attribute + 2);
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

    /** The prologue's code and the offsets of its labels. */
    private final class Prologue {
      final Out code = new Out(32);
      final int tryEnd;
      final int notTaken;
      final int failed;
      final int original;

      Prologue(Target t) throws Unhandled {
        if (t.hook <= 5) {
          code.u1(ICONST_0 + t.hook);
        } else {
          code.u1(BIPUSH).u1(t.hook);
        }
        StringBuilder enterDesc = new StringBuilder("(I");
        for (int slot : t.argumentSlots) {
          if (slot < 0) {
            code.u1(ACONST_NULL);
          } else if (slot <= 3) {
            code.u1(ALOAD_0 + slot);
          } else if (slot <= 0xFF) {
            code.u1(ALOAD).u1(slot);
          } else {
            throw new Unhandled("wide local");
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
        code.put2(ifNull + 1, notTaken - ifNull);
        code.put2(jump + 1, original - jump);
      }
    }
  }
}
