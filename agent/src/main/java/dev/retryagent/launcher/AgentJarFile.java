package dev.retryagent.launcher;

import java.io.File;

/**
 * Where the agent's classes come from: the packaged {@code retry-agent.jar}, or a directory of
 * classes in a build. Apart from {@link RetryAgent}, which is compiled for Java 8 and must name no
 * class of ours that a Java 8 JVM could not load before it has checked the JVM's version.
 */
final class AgentJarFile {
  private AgentJarFile() {}

  /** The jar (or classes directory) this class was loaded from. */
  static File location() throws Exception {
    return new File(AgentJarFile.class.getProtectionDomain().getCodeSource().getLocation().toURI());
  }
}
