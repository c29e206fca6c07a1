package dev.retryagent.agent.jdk;

/**
 * {@link JdkHttpHookTest} again with the prologues written by ASM ({@link JdkHttpHook.WithAsm}),
 * the path for a class file {@code ProloguePatcher} leaves alone.
 */
class JdkHttpHookAsmTest extends JdkHttpHookTest {
  @Override
  byte[] instrument(byte[] classfile) {
    return JdkHttpHook.WithAsm.instrument(classfile);
  }
}
