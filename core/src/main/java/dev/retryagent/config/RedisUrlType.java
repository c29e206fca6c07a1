package dev.retryagent.config;

/**
 * {@code fleet.redis.url}: a {@link RedisUrl}. Its text may hold a password, so a problem shows it
 * with the user-info replaced by {@code ***} (all of it when it is no URL), and the reason never
 * repeats it.
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
    // A value that is no URL may be the password itself (url: ${REDIS_PASSWORD} written for
    // ${REDIS_URL}): with no scheme there are no parts to tell apart, so none of it is shown. The
    // text of the file with its ${...} references is shown, as the file's reader sees it.
    if (text.indexOf("://") < 0 && text.indexOf("${") < 0) {
      return "***";
    }
    return ConfigProblem.shown(RedisUrl.redact(text));
  }
}
