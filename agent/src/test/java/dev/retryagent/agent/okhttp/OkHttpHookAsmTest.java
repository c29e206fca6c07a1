package dev.retryagent.agent.okhttp;

/**
 * {@link OkHttpHookTest} again with the hooks written by ASM ({@link OkHttpHook.WithAsm}), the path
 * for a class file {@code ProloguePatcher} leaves alone. The transformer still decides and counts;
 * the class defined is ASM's.
 */
class OkHttpHookAsmTest extends OkHttpHookTest {
  @Override
  byte[] rewrite(
      OkHttpTransformer transformer, ClassLoader loader, String internalName, byte[] bytes) {
    byte[] patched = super.rewrite(transformer, loader, internalName, bytes);
    return patched == null ? null : OkHttpHook.WithAsm.instrument(internalName, bytes);
  }
}
