/** A -javaagent that does nothing: what any agent costs before it does any work. */
public class NoOpAgent {
  public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
