import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;

/**
 * What a class-load hook costs the JVM, apart from any agent's own work (premain-cpu.sh --hooks).
 * With the argument {@code lasting}: adds a retransform-capable transformer that changes nothing
 * and keeps it, as every agent that rewrites classes as they load does (from then on the JVM hands
 * it each class it defines, reading a CDS-archived class's file back from the runtime image
 * first). With {@code one}: rewrites one class already loaded (java.net.http's {@code
 * HttpClientFacade}, loaded without being initialized) through such a transformer, then removes
 * it, so no later class pays: what a hook that needed no class-load hook would cost.
 */
public class TransformerCostAgent {
  public static void premain(String args, Instrumentation inst) throws Exception {
    ClassFileTransformer unchanged =
        new ClassFileTransformer() {
          @Override
          public byte[] transform(
              Module module,
              ClassLoader loader,
              String name,
              Class<?> redefined,
              ProtectionDomain domain,
              byte[] classfile) {
            return null;
          }
        };
    inst.addTransformer(unchanged, true);
    if ("one".equals(args)) {
      inst.retransformClasses(
          Class.forName(
              "jdk.internal.net.http.HttpClientFacade", false, ClassLoader.getPlatformClassLoader()));
      inst.removeTransformer(unchanged);
    }
  }
}
