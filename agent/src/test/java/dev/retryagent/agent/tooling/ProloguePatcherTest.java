package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link ProloguePatcher} on methods of the shapes it must shift correctly ({@link Shapes}): a
 * {@code tableswitch} (alignment), a frame at the first instruction and one far from it (the
 * extended encodings), an exception table, no stack map at all, {@code void}, a local above 3, a
 * hook number above 5, frames that hold an object between its {@code new} and its constructor. Each
 * patched class is defined by a loader of its own, so the JVM verifies it, and each method runs
 * both ways: the hook declines (the original body runs, unchanged) and takes it (its value is
 * returned, the body does not run).
 */
class ProloguePatcherTest {
  /** What the bodies ran: one list for the original class and its patched copy. */
  public static final class Ran {
    public static final List<String> BODIES = new CopyOnWriteArrayList<>();

    private Ran() {}
  }

  /** The methods patched here; the bodies record that they ran. */
  public static class Shapes {
    private static final List<String> RAN = Ran.BODIES;

    public String aSwitch(String s, int k) {
      RAN.add("aSwitch");
      switch (k) {
        case 0:
          return s + "zero";
        case 1:
          return s + "one";
        case 2:
          return s + "two";
        case 3:
          return s + "three";
        default:
          return s + "many";
      }
    }

    public String aLoopFirst(String s) {
      String r = s;
      for (int i = 0; i < 3; i++) {
        r = r + i;
      }
      RAN.add("aLoopFirst");
      return r;
    }

    public String aCatch(String s) {
      RAN.add("aCatch");
      try {
        if (s.isEmpty()) {
          throw new IllegalStateException("empty");
        }
        return "ok " + s;
      } catch (IllegalStateException e) {
        return "caught " + e.getMessage();
      }
    }

    public String straight(String s) {
      RAN.add("straight");
      return s;
    }

    public void nothing(String s) {
      RAN.add("nothing " + s);
    }

    // First frames 56, 61 and 62 bytes in: after a prologue of three arguments (four nops), the
    // last two no longer fit the one-byte encodings (ProloguePatcher writes the extended ones).
    public String farTernary7(String s, int k) {
      RAN.add("farTernary7");
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      return s.concat(k > 0 ? "a" : "b");
    }

    public String farTernary8(String s, int k) {
      RAN.add("farTernary8");
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      return s.concat(k > 0 ? "a" : "b");
    }

    public String farIf9(String s, int k) {
      RAN.add("farIf9");
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      s = s.trim();
      if (k > 0) {
        return s;
      }
      return s.concat("b");
    }

    public String manyLocals(long a, long b, String s) {
      RAN.add("manyLocals");
      return s + (a + b);
    }

    // A branch between `new` and its constructor: the frames at both targets hold the object not
    // yet initialised, named by the absolute offset of its `new` (which the prologue moves).
    public String newAcrossABranch(String s, int k) {
      RAN.add("newAcrossABranch");
      return new StringBuilder(k > 0 ? s : "none").append('!').toString();
    }
  }

  private static final int HOOK = 30; // not a real hook's number: bipush, and no clash

  private final List<Object[]> seen = new CopyOnWriteArrayList<>();
  private volatile Object answer;

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @BeforeEach
  void register() {
    Ran.BODIES.clear();
    Bridge.register(
        HOOK,
        "a test hook",
        (a, b, c, d, e, f) -> {
          seen.add(new Object[] {a, b, c});
          return answer;
        });
  }

  @AfterEach
  void unregister() {
    Bridge.unregister(HOOK);
  }

  private static List<ProloguePatcher.Target> targets() {
    String str = "Ljava/lang/String;";
    List<ProloguePatcher.Target> t = new ArrayList<>();
    t.add(target("aSwitch", "(" + str + "I)" + str, new int[] {0, 1}, "java/lang/String"));
    t.add(target("aLoopFirst", "(" + str + ")" + str, new int[] {0, 1}, "java/lang/String"));
    t.add(target("aCatch", "(" + str + ")" + str, new int[] {0, 1}, "java/lang/String"));
    t.add(target("straight", "(" + str + ")" + str, new int[] {1, -1}, "java/lang/String"));
    t.add(target("nothing", "(" + str + ")V", new int[] {0, 1}, null));
    String si = "(" + str + "I)" + str;
    t.add(target("farTernary7", si, new int[] {0, 1}, "java/lang/String"));
    t.add(target("farTernary8", si, new int[] {0, 1, -1}, "java/lang/String"));
    t.add(target("farIf9", si, new int[] {0, 1, -1}, "java/lang/String"));
    t.add(target("manyLocals", "(JJ" + str + ")" + str, new int[] {5, 0}, "java/lang/String"));
    t.add(target("newAcrossABranch", si, new int[] {0, 1}, "java/lang/String"));
    return t;
  }

  private static ProloguePatcher.Target target(
      String name, String desc, int[] slots, String returnType) {
    return new ProloguePatcher.Target(name, desc, HOOK, slots, returnType);
  }

  private Object patchedShapes() throws Exception {
    byte[] patched = ProloguePatcher.patch(DefiningLoader.bytesOf(Shapes.class), targets());
    assertThat(patched).as("patched").isNotNull();
    ClassLoader own =
        new DefiningLoader(getClass().getClassLoader(), Map.of(Shapes.class.getName(), patched));
    Class<?> c = Class.forName(Shapes.class.getName(), true, own); // linked: verified
    assertThat(c).isNotSameAs(Shapes.class);
    return c.getConstructor().newInstance();
  }

  private static Object call(Object o, String name, Object... args) throws Throwable {
    for (Method m : o.getClass().getMethods()) {
      if (m.getName().equals(name)) {
        try {
          return m.invoke(o, args);
        } catch (InvocationTargetException e) {
          throw e.getCause();
        }
      }
    }
    throw new NoSuchMethodException(name);
  }

  @Test
  void declinedTheOriginalBodyRunsAsBefore() throws Throwable {
    Object o = patchedShapes();
    answer = null;

    String[] names = {"zero", "one", "two", "three", "many"};
    for (int k = 0; k < 5; k++) {
      assertThat(call(o, "aSwitch", "n", k)).isEqualTo("n" + names[k]);
    }
    assertThat(call(o, "aLoopFirst", "x")).isEqualTo("x012");
    assertThat(call(o, "aCatch", "")).isEqualTo("caught empty");
    assertThat(call(o, "aCatch", "y")).isEqualTo("ok y");
    assertThat(call(o, "straight", "s")).isEqualTo("s");
    assertThat(call(o, "nothing", "v")).isNull();
    assertThat(call(o, "manyLocals", 1L, 2L, "m")).isEqualTo("m3");
    assertThat(call(o, "farTernary7", " t ", 1)).isEqualTo("ta");
    assertThat(call(o, "farTernary8", " t ", 0)).isEqualTo("tb");
    assertThat(call(o, "farIf9", " t ", 1)).isEqualTo("t");
    assertThat(call(o, "farIf9", " t ", 0)).isEqualTo("tb");
    assertThat(call(o, "newAcrossABranch", "n", 1)).isEqualTo("n!");
    assertThat(call(o, "newAcrossABranch", "n", 0)).isEqualTo("none!");

    assertThat(Ran.BODIES)
        .containsExactly(
            "aSwitch",
            "aSwitch",
            "aSwitch",
            "aSwitch",
            "aSwitch",
            "aLoopFirst",
            "aCatch",
            "aCatch",
            "straight",
            "nothing v",
            "manyLocals",
            "farTernary7",
            "farTernary8",
            "farIf9",
            "farIf9",
            "newAcrossABranch",
            "newAcrossABranch");
    // every call reached the hook first, with the arguments it names
    assertThat(seen).hasSize(17);
    assertThat(seen.get(8)).containsExactly("s", null, null); // straight: slot 1, then null
    assertThat(seen.get(10)[0]).isEqualTo("m"); // manyLocals: slot 5 (after two longs)
    assertThat(seen.get(10)[1]).isSameAs(o);
  }

  @Test
  void takenTheHooksValueIsReturnedAndTheBodyDoesNotRun() throws Throwable {
    Object o = patchedShapes();
    answer = Bridge.returned("taken");

    assertThat(call(o, "aSwitch", "n", 2)).isEqualTo("taken");
    assertThat(call(o, "aLoopFirst", "x")).isEqualTo("taken");
    assertThat(call(o, "aCatch", "")).isEqualTo("taken");
    assertThat(call(o, "manyLocals", 1L, 2L, "m")).isEqualTo("taken");
    assertThat(call(o, "farTernary8", "x", 1)).isEqualTo("taken");
    assertThat(call(o, "farIf9", "x", 1)).isEqualTo("taken");
    assertThat(call(o, "newAcrossABranch", "x", 1)).isEqualTo("taken");
    answer = Bridge.TAKEN;
    assertThat(call(o, "nothing", "v")).isNull();

    assertThat(Ran.BODIES).isEmpty();
  }

  @Test
  void aThrowableTheHookDeliversReachesTheCaller() throws Throwable {
    Object o = patchedShapes();
    answer = new IOException("from the hook");

    assertThatThrownBy(() -> call(o, "straight", "s"))
        .isInstanceOf(IOException.class)
        .hasMessage("from the hook");
    assertThat(Ran.BODIES).isEmpty();
  }

  @Test
  void whatItDoesNotKnowItLeavesToAsm() {
    byte[] shapes = DefiningLoader.bytesOf(Shapes.class);
    List<ProloguePatcher.Target> missing = new ArrayList<>(targets());
    missing.add(target("absent", "()V", new int[] {0}, null));
    assertThat(ProloguePatcher.patch(shapes, missing)).as("a missing method").isNull();

    byte[] future = shapes.clone();
    future[6] = 0;
    future[7] = (byte) (ProloguePatcher.NEWEST_MAJOR_VERSION + 1);
    assertThat(ProloguePatcher.patch(future, targets())).as("a newer class file").isNull();

    assertThat(ProloguePatcher.patch(new byte[] {1, 2, 3}, targets())).as("no class").isNull();
    byte[] truncated = java.util.Arrays.copyOf(shapes, shapes.length / 2);
    assertThat(ProloguePatcher.patch(truncated, targets())).as("truncated").isNull();
  }
}
