package dev.retryagent.config;

/**
 * {@code fleet.redis.url}: a {@link RedisUrl}. Its text may hold a password, so a problem shows it
 * with the user-info replaced by {@code ***}, and the reason never repeats it.
 */
final class RedisUrlType extends ValueType.StringType {
  static final RedisUrlType INSTANCE = new RedisUrlType();

  private RedisUrlType() {
    // The pattern is for the JSON schema; convert() is the real check.
    super(
        "[Rr][Ee][Dd][Ii][Ss][Ss]?://\\S+",
        "a URL redis://[[user]:password@]host[:port][/database] (rediss:// for TLS)");
  }

  @Override
  Object convert(String text) {
    try {
      return RedisUrl.parse(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(e.getMessage() + "; allowed " + allowed());
    }
  }

  @Override
  boolean maySecret() {
    return true;
  }

  @Override
  String shown(String text) {
    return ConfigProblem.shown(RedisUrl.redact(text));
  }
}
