package dev.retryagent.agent.jdk;

import dev.retryagent.agent.tooling.DefiningLoader;
import java.util.Map;

/** Defines one class from instrumented bytes, child-first; everything else from its parent. */
final class HookedClassLoader extends DefiningLoader {
  HookedClassLoader(Class<?> original, byte[] bytes) {
    super(original.getClassLoader(), Map.of(original.getName(), bytes));
  }
}
