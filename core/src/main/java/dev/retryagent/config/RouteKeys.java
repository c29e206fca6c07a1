package dev.retryagent.config;

import static dev.retryagent.config.ValueType.listOf;

import dev.retryagent.config.ConfigSchema.KeyRef;
import java.util.Locale;

/**
 * A route's own keys: its {@code name} and the {@code match} that says which requests it claims.
 * Its policy sections are {@code defaults}' ({@link ConfigSchema#POLICY}). Each key is written
 * once, with where its value goes ({@link KeyVisitor}); meanings are in docs/configuration.md.
 */
final class RouteKeys {
  private RouteKeys() {}

  /** Read by the assembler to place problems about the name (reserved, repeated). */
  static final KeyRef NAME = new KeyRef();

  static final ValueType ROUTE_NAME =
      ValueType.string(
          "[A-Za-z0-9][A-Za-z0-9._-]{0,63}",
          "a name of letters, digits, '.', '_' and '-', starting with a letter or digit (at most"
              + " 64), such as payments");

  static void visit(KeyVisitor k, ConfigDraft d) {
    if (k.key("name", ROUTE_NAME, NAME)) {
      d.routeName = k.text();
    }
    KeyVisitor match =
        k.section("match", "Which requests a route claims; every list given must match.");
    if (match.key("hosts", listOf(ValueType.HOST_GLOB).nonEmpty("host glob", "host"))) {
      d.hosts = match.list();
    }
    if (match.key("methods", listOf(ValueType.METHOD).nonEmpty("method", "method"))) {
      d.methods.clear();
      for (String m : match.<String>list()) {
        d.methods.add(m.toUpperCase(Locale.ROOT));
      }
    }
    if (match.key("paths", listOf(ValueType.PATH_GLOB).nonEmpty("path glob", "path"))) {
      d.paths = match.list();
    }
  }
}
