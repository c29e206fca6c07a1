package dev.retryagent.agent.apache;

/**
 * {@link ApacheHookTest} again with the hooks written by ASM ({@link ApacheHook.WithAsm}), the path
 * for a class file {@code ProloguePatcher} leaves alone. The transformer still decides and counts;
 * the class defined is ASM's.
 */
class ApacheHookAsmTest extends ApacheHookTest {
  @Override
  byte[] rewrite(
      ApacheTransformer transformer, ClassLoader loader, String internalName, byte[] bytes) {
    byte[] patched = super.rewrite(transformer, loader, internalName, bytes);
    return patched == null ? null : ApacheHook.WithAsm.instrument(internalName, bytes);
  }
}
