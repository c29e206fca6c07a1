package dev.retryagent.config;

import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A Java regular expression ({@code agent.redact.pathSegments}): at most 200 characters, no control
 * character, and it must compile; converts to the text as written.
 */
final class RegexType extends ValueType.StringType {
  RegexType(String description) {
    super("[^\\x00-\\x1f\\x7f]{1,200}", description);
  }

  @Override
  Object convert(String text) {
    String s = (String) super.convert(text);
    try {
      Pattern.compile(s);
    } catch (PatternSyntaxException e) {
      // The JDK's description alone: its message is several lines, with the text and a caret.
      throw new IllegalArgumentException(
          "not a regular expression (" + e.getDescription() + "); allowed " + allowed());
    }
    return s;
  }
}
