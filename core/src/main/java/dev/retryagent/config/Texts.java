package dev.retryagent.config;

import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/** How values and nodes are shown in problem messages. */
final class Texts {
  private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9_.:/*%@+$!\\[\\]{}-]+");
  private static final int MAX_SHOWN = 60;

  private Texts() {}

  /** A value as written: bare when it is one simple token, else quoted; long values cut. */
  static String shown(String text) {
    String t = text.length() > MAX_SHOWN ? text.substring(0, MAX_SHOWN) + "..." : text;
    if (PLAIN.matcher(t).matches()) {
      return t;
    }
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < ' ' || c == 0x7f) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  /** A node for "found ...": its value, or "a list", "a map", "nothing". */
  static String describe(Node node) {
    if (node instanceof ScalarNode) {
      return isNull(node) ? "nothing (null)" : shown(((ScalarNode) node).getValue());
    }
    if (node instanceof SequenceNode) {
      return "a list";
    }
    if (node instanceof MappingNode) {
      return "a map";
    }
    return "an unexpected node";
  }

  static boolean isNull(Node node) {
    return node instanceof ScalarNode && Tag.NULL.equals(node.getTag());
  }

  /** {@code routes[1]} + {@code retry} = {@code routes[1].retry}. */
  static String join(String path, String key) {
    return path.isEmpty() ? key : path + "." + key;
  }
}
