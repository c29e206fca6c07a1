package dev.retryagent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No decision of main code rests on a {@code ConcurrentHashMap}'s {@code isEmpty()} or {@code
 * size()}. Both sum counts that other threads change while they are read: read while one entry is
 * put on a thread and another removed on a second, they can answer empty for a map that holds the
 * entry asked for the whole time. OkHttp's enqueue ran an attempt as a call of its own so (one call
 * and one attempt counted twice, the soak's ok-enqueue route, once in ~37,000 calls), lost what a
 * call kept through its wait, and HttpURLConnection's look at dropped connections stopped. A look
 * for one entry is a {@code get}, a {@code remove}, or a flag set before the first put.
 *
 * <p>Each use left is a bound or a figure, where one more or less is harmless; it is listed here
 * with why, so that a new one is a decision, not an accident.
 */
class ConcurrentMapAggregatesTest {
  /** {@code file name -> field.method()} allowed, and why. */
  private static final Map<String, String> ALLOWED =
      Map.of(
          "InternalErrors.java reported.size()", "a cap on causes remembered, not exact",
          "Sanitizer.java EXTRA_HEADERS.size()", "a cap on patterns cached, not exact",
          "RetryEngine.java hostPauses.size()", "a figure for tests",
          "RetryMetrics.java hosts.size()", "trackedHosts(), a figure",
          "AsyncRetrier.java running.size()", "running(), a figure",
          "ManagedAttempts.java attempts.size()", "a figure for tests");

  /** A field or variable made a concurrent map or set: {@code name = new ConcurrentHashMap...}. */
  private static final Pattern MADE =
      Pattern.compile(
          "\\b(\\w+)\\s*=\\s*(?:new\\s+ConcurrentHashMap\\b|ConcurrentHashMap\\.newKeySet\\b)");

  /** A field declared as one and set elsewhere (a constructor). */
  private static final Pattern DECLARED =
      Pattern.compile("\\bConcurrentHashMap<[^;=(){}]*>\\s+(\\w+)\\s*;");

  @Test
  void noDecisionReadsAConcurrentMapsSizeOrEmptiness() throws IOException {
    Path main = Paths.get("src/main/java");
    assertThat(main).isDirectory();
    Map<String, String> found = new TreeMap<>();
    int maps = 0;
    List<Path> files;
    try (Stream<Path> s = Files.walk(main)) {
      files = s.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList());
    }
    for (Path file : files) {
      String text = withoutComments(Files.readString(file, StandardCharsets.UTF_8));
      Set<String> names = new LinkedHashSet<>();
      for (Pattern p : List.of(MADE, DECLARED)) {
        Matcher m = p.matcher(text);
        while (m.find()) {
          names.add(m.group(1));
        }
      }
      maps += names.size();
      for (String name : names) {
        Matcher use =
            Pattern.compile("\\b" + Pattern.quote(name) + "\\.(isEmpty|size|mappingCount)\\(\\)")
                .matcher(text);
        while (use.find()) {
          String key = file.getFileName() + " " + name + "." + use.group(1) + "()";
          found.put(key, main.relativize(file) + ":" + line(text, use.start()));
        }
      }
    }
    assertThat(maps).as("concurrent maps and sets found in main code").isGreaterThan(10);
    List<String> unexpected = new ArrayList<>();
    found.forEach(
        (key, where) -> {
          if (!ALLOWED.containsKey(key)) {
            unexpected.add(key + " at " + where);
          }
        });
    assertThat(unexpected)
        .as("reads of a ConcurrentHashMap's size or emptiness (a get, a remove or a flag instead)")
        .isEmpty();
    assertThat(ALLOWED.keySet())
        .as("allowed uses still there (remove the ones gone)")
        .isSubsetOf(found.keySet());
  }

  /** Comments blanked (line breaks kept, for line numbers): a comment may name what it avoids. */
  private static String withoutComments(String text) {
    Matcher m = COMMENT.matcher(text);
    StringBuilder out = new StringBuilder(text.length());
    int from = 0;
    while (m.find()) {
      out.append(text, from, m.start());
      out.append(m.group().replaceAll("[^\n]", " "));
      from = m.end();
    }
    return out.append(text, from, text.length()).toString();
  }

  private static final Pattern COMMENT = Pattern.compile("//[^\n]*|/\\*.*?\\*/", Pattern.DOTALL);

  private static int line(String text, int offset) {
    int n = 1;
    for (int i = 0; i < offset; i++) {
      if (text.charAt(i) == '\n') {
        n++;
      }
    }
    return n;
  }
}
