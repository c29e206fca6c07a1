package dev.retryagent.launcher;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.Deflater;

/**
 * Writes a {@link ClassPack}: run by the build (agent/pom.xml, "hide-classes"), never by the agent,
 * and left out of the agent jar.
 *
 * <p>{@code java ClassPackWriter <classes dir> <pack file> <prefix>=<how> ...} packs every {@code
 * .class} and {@code .classdata} file under the directory, named by its path without the suffix.
 * The longest prefix that matches a path says how: {@code stored} (read at start-up, where
 * inflating each class cost ~25 us of CPU more), {@code deflated} (when that is smaller), or {@code
 * skip} (not packed: the launcher's own classes, {@code META-INF}). A path no prefix matches is
 * deflated. Fails on a name that is not ASCII or is packed twice ({@code X.class} and {@code
 * X.classdata}).
 */
public final class ClassPackWriter {
  private ClassPackWriter() {}

  public static void main(String[] args) throws IOException {
    if (args.length < 2) {
      throw new IllegalArgumentException(
          "usage: ClassPackWriter <classes dir> <pack file> [<prefix>=stored|deflated|skip ...]");
    }
    Map<String, String> rules = new TreeMap<>();
    for (int i = 2; i < args.length; i++) {
      int eq = args[i].lastIndexOf('=');
      String how = eq < 0 ? "" : args[i].substring(eq + 1);
      if (!how.equals("stored") && !how.equals("deflated") && !how.equals("skip")) {
        throw new IllegalArgumentException("not <prefix>=stored|deflated|skip: " + args[i]);
      }
      rules.put(args[i].substring(0, eq), how);
    }
    Path root = Paths.get(args[0]);
    Map<String, byte[]> classes = new TreeMap<>();
    Set<String> stored = new TreeSet<>();
    List<Path> files;
    try (Stream<Path> walk = Files.walk(root)) {
      files = walk.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
    }
    for (Path file : files) {
      String name = root.relativize(file).toString().replace(java.io.File.separatorChar, '/');
      String path = stripSuffix(name);
      if (path == null) {
        continue;
      }
      String how = howToPack(rules, name);
      if (how.equals("skip")) {
        continue;
      }
      if (classes.put(path, Files.readAllBytes(file)) != null) {
        throw new IllegalArgumentException("packed twice: " + path);
      }
      if (how.equals("stored")) {
        stored.add(path);
      }
    }
    try (OutputStream out = Files.newOutputStream(Paths.get(args[1]))) {
      write(classes, stored, out);
    }
    System.out.println("ClassPackWriter: " + classes.size() + " classes -> " + args[1]);
  }

  private static String stripSuffix(String name) {
    if (name.endsWith(".classdata")) {
      return name.substring(0, name.length() - ".classdata".length());
    }
    if (name.endsWith(".class")) {
      return name.substring(0, name.length() - ".class".length());
    }
    return null;
  }

  private static String howToPack(Map<String, String> rules, String name) {
    String best = null;
    for (String prefix : rules.keySet()) {
      if (name.startsWith(prefix) && (best == null || prefix.length() > best.length())) {
        best = prefix;
      }
    }
    return best == null ? "deflated" : rules.get(best);
  }

  /**
   * Writes the pack of {@code classes} (path to class file) to {@code out}; a class in {@code
   * stored} is never deflated.
   */
  static void write(Map<String, byte[]> classes, Set<String> stored, OutputStream out)
      throws IOException {
    int count = classes.size();
    // a quarter to a half of the slots used: a lookup probes one or two, and every probe ends
    int slots = Integer.highestOneBit(Math.max(1, count) * 2) * 2;
    ByteArrayOutputStream names = new ByteArrayOutputStream();
    ByteArrayOutputStream data = new ByteArrayOutputStream();
    byte[] slotBytes = new byte[slots * ClassPack.SLOT];
    for (Map.Entry<String, byte[]> c : classes.entrySet()) {
      String path = c.getKey();
      byte[] bytes = c.getValue();
      for (int i = 0; i < path.length(); i++) {
        if (path.charAt(i) >= 0x80) {
          throw new IllegalArgumentException("not an ASCII name: " + path);
        }
      }
      if (path.length() > 0xffff) {
        throw new IllegalArgumentException("name too long: " + path);
      }
      byte[] kept = stored.contains(path) ? bytes : deflatedIfSmaller(bytes);
      int slot = path.hashCode() & (slots - 1);
      while (ClassPack.intAt(slotBytes, slot * ClassPack.SLOT + 4) != 0) {
        slot = (slot + 1) & (slots - 1);
      }
      int s = slot * ClassPack.SLOT;
      putInt(slotBytes, s, path.hashCode());
      putInt(slotBytes, s + 4, names.size() + 1);
      putInt(slotBytes, s + 8, data.size());
      putInt(slotBytes, s + 12, kept.length);
      putInt(slotBytes, s + 16, bytes.length);
      names.write(path.length() >>> 8);
      names.write(path.length());
      for (int i = 0; i < path.length(); i++) {
        names.write(path.charAt(i));
      }
      data.write(kept);
    }
    byte[] header = new byte[ClassPack.HEADER];
    putInt(header, 0, ClassPack.MAGIC);
    putInt(header, 4, ClassPack.VERSION);
    putInt(header, 8, slots);
    putInt(header, 12, count);
    putInt(header, 16, names.size());
    putInt(header, 20, ClassPack.HEADER + slotBytes.length + names.size());
    out.write(header);
    out.write(slotBytes);
    names.writeTo(out);
    data.writeTo(out);
  }

  private static byte[] deflatedIfSmaller(byte[] bytes) {
    Deflater deflater = new Deflater(Deflater.BEST_COMPRESSION);
    try {
      deflater.setInput(bytes);
      deflater.finish();
      ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length);
      byte[] buffer = new byte[8192];
      while (!deflater.finished()) {
        out.write(buffer, 0, deflater.deflate(buffer));
      }
      return out.size() < bytes.length ? out.toByteArray() : bytes;
    } finally {
      deflater.end();
    }
  }

  private static void putInt(byte[] b, int at, int value) {
    b[at] = (byte) (value >>> 24);
    b[at + 1] = (byte) (value >>> 16);
    b[at + 2] = (byte) (value >>> 8);
    b[at + 3] = (byte) value;
  }
}
