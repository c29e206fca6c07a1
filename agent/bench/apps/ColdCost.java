import java.io.FileInputStream;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Paths;
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
 * </ul>
 */
public class ColdCost {
  public static void main(String[] args) throws Exception {
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
      default:
        throw new IllegalArgumentException("unknown case " + args[0]);
    }
    long micros = (System.nanoTime() - start) / 1000;
    System.out.println(micros + " " + result);
  }
}
