package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

class LoaderNamesTest {
  @Test
  void aLoaderIsItsClassItsNameAndItsIdentityOnOneBoundedLine() throws Exception {
    String longName = "x".repeat(500) + "\u202e\u0007";
    try (URLClassLoader named = new URLClassLoader("a\nb\u202ec", new URL[0], null);
        URLClassLoader unnamed = new URLClassLoader(new URL[0], null);
        URLClassLoader tooLong = new URLClassLoader(longName, new URL[0], null)) {
      String hash = Integer.toHexString(System.identityHashCode(named));
      assertThat(LoaderNames.describe(named)).isEqualTo("java.net.URLClassLoader[a?b?c]@" + hash);
      assertThat(LoaderNames.describe(unnamed)).startsWith("java.net.URLClassLoader@");
      assertThat(LoaderNames.describe(tooLong))
          .contains("[" + "x".repeat(LoaderNames.MAX_NAME) + "...]@")
          .hasSizeLessThan(200);
    }
    assertThat(LoaderNames.describe(null)).isEqualTo("the bootstrap loader");
  }

  @Test
  void theGlueLoaderNamesItsParentOnOneLine() {
    GlueClassLoader glue =
        new GlueClassLoader(
            "retry-agent-test", new MultiLine(), getClass().getClassLoader(), "dev.none.");
    assertThat(glue.toString()).doesNotContain("\n").contains(MultiLine.class.getName() + "@");
  }

  /** A loader whose own getName() fails is named without it; nothing is thrown (r34). */
  @Test
  void aLoaderWhoseNameFailsIsNamedByItsClass() {
    // Fails only once made: the JDK's own constructor asks getName() too.
    java.util.concurrent.atomic.AtomicBoolean made =
        new java.util.concurrent.atomic.AtomicBoolean();
    ClassLoader failing =
        new ClassLoader(null) {
          @Override
          public String getName() {
            if (made.get()) {
              throw new IllegalStateException("not now");
            }
            return super.getName();
          }
        };
    made.set(true);
    assertThat(LoaderNames.describe(failing))
        .startsWith(failing.getClass().getName() + "@")
        .doesNotContain("[");
  }

  static final class MultiLine extends ClassLoader {
    MultiLine() {
      super(null);
    }

    @Override
    public String toString() {
      return "line one\nline two";
    }
  }
}
