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
 * it, so no later class pays: what a hook that needed no class-load hook would cost. With {@code
 * four}: four lasting transformers, each with a prefix and name test, as retry-agent's four
 * clients have. With {@code plain}: one lasting no-op transformer that cannot retransform.
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
    if ("four".equals(args)) {
      // four lasting transformers, each with a name test as retry-agent's four hooks have
      String[] prefixes = {"jdk/internal/net/http/", "okhttp3/", "org/apache/h", "sun/net/www/"};
      for (final String prefix : prefixes) {
        inst.addTransformer(
            new ClassFileTransformer() {
              @Override
              public byte[] transform(
                  Module module,
                  ClassLoader loader,
                  String name,
                  Class<?> redefined,
                  ProtectionDomain domain,
                  byte[] classfile) {
                if (name != null && name.startsWith(prefix) && name.equals(prefix + "X")) {
                  return classfile;
                }
                return null;
              }
            },
            true);
      }
      return;
    }
    if ("plain".equals(args)) {
      // a lasting transformer that cannot retransform: the JVM's other JVMTI environment
      inst.addTransformer(unchanged, false);
      return;
    }
    inst.addTransformer(unchanged, true);
    if ("one".equals(args)) {
      inst.retransformClasses(
          Class.forName(
              "jdk.internal.net.http.HttpClientFacade", false, ClassLoader.getPlatformClassLoader()));
      inst.removeTransformer(unchanged);
    }
  }
}
