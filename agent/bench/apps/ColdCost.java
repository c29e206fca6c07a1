import java.io.FileInputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.jar.JarFile;
import java.util.zip.ZipFile;

/**
 * The first, cold, use of one JDK facility in a fresh JVM, in microseconds of wall time: what a
 * piece of {@code premain} pays the first time it reaches for it. Run by cold-costs.sh, once per
 * JVM, interleaved; each case is what a start-up change of issue 13 replaced or removed.
 *
 * <ul>
 *   <li>{@code bigdecimal}: {@code new BigDecimal("1.5").doubleValue()} (JDK 25: its initialisation
 *       starts the common ForkJoinPool); {@code parsedouble}: {@code Double.parseDouble("1.5")}.
 *   <li>{@code nio-read FILE}: {@code Files.newInputStream} and read; {@code fis-read FILE}: a
 *       {@code FileInputStream}.
 *   <li>{@code zip-open JAR}: open a jar and read its manifest, as the system class loader does
 *       with an agent jar (its cost grows with the number of entries).
 *   <li>{@code pack-read JAR NAMES}: read the classes listed in the file NAMES (one path a line,
 *       {@code dev/retryagent/config/ConfigLoader}) from the agent jar's class pack, as its class
 *       loader does; only the reads are timed, not opening the pack. A class JAR lacks is skipped
 *       (a build before or after a change). Needs JAR on the class path too (its {@code
 *       ClassPack}).
 * </ul>
 */
public class ColdCost {
  public static void main(String[] args) throws Throwable {
    long start = System.nanoTime();
    Object result;
    switch (args[0]) {
      case "bigdecimal":
        result = new BigDecimal("1.5").doubleValue();
        break;
      case "parsedouble":
        result = Double.parseDouble("1.5");
        break;
      case "nio-read":
        try (InputStream in = Files.newInputStream(Paths.get(args[1]))) {
          result = in.readAllBytes().length;
        }
        break;
      case "fis-read":
        try (InputStream in = new FileInputStream(args[1])) {
          result = in.readAllBytes().length;
        }
        break;
      case "zip-open":
        try (ZipFile zip = new ZipFile(args[1])) {
          try (InputStream in = zip.getInputStream(zip.getEntry("META-INF/MANIFEST.MF"))) {
            result = in.readAllBytes().length; // a number: no string concatenation in the timing
          }
        }
        break;
      case "pack-read":
        {
          List<String> names = Files.readAllLines(Paths.get(args[2]));
          Class<?> type = Class.forName("dev.retryagent.launcher.ClassPack");
          Object pack =
              type.getMethod("open", JarFile.class).invoke(null, new JarFile(args[1], false));
          MethodHandle read =
              MethodHandles.publicLookup()
                  .findVirtual(type, "read", MethodType.methodType(byte[].class, String.class));
          long bytes = 0;
          start = System.nanoTime();
          for (String name : names) {
            byte[] b = (byte[]) read.invoke(pack, name); // null: not in this jar (another build)
            bytes += b == null ? 0 : b.length;
          }
          result = bytes;
        }
        break;
      default:
        throw new IllegalArgumentException("unknown case " + args[0]);
    }
    long micros = (System.nanoTime() - start) / 1000;
    System.out.println(micros + " " + result);
  }
}
