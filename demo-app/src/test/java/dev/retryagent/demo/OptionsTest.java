package dev.retryagent.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class OptionsTest {
  @Test
  void defaultsAreTheDocumentedOnes() {
    Options o = Options.parse();

    assertThat(o.articles()).isEqualTo(20);
    assertThat(o.workers()).isEqualTo(4);
    assertThat(o.rateLimit()).isEqualTo(0.3);
    assertThat(o.serverErrors()).isEqualTo(0.1);
    assertThat(o.resets()).isEqualTo(0.05);
    assertThat(o.gatewayFailures()).isEqualTo(2);
    assertThat(o.help()).isFalse();
  }

  @Test
  void acceptsBothFlagForms() {
    Options o =
        Options.parse(
            "--articles",
            "5",
            "--workers=2",
            "--rate-limit",
            "0.5",
            "--server-errors=0",
            "--resets",
            "0.25",
            "--gateway-failures",
            "0",
            "--seed=-7");

    assertThat(o.articles()).isEqualTo(5);
    assertThat(o.workers()).isEqualTo(2);
    assertThat(o.rateLimit()).isEqualTo(0.5);
    assertThat(o.serverErrors()).isZero();
    assertThat(o.resets()).isEqualTo(0.25);
    assertThat(o.gatewayFailures()).isZero();
    assertThat(o.seed()).isEqualTo(-7);
  }

  @Test
  void theSeedIsRandomUnlessGiven() {
    assertThat(Options.parse("--seed", "42").seed()).isEqualTo(42);
    long a = Options.parse().seed();
    boolean varies = false;
    for (int i = 0; i < 20 && !varies; i++) {
      varies = Options.parse().seed() != a;
    }
    assertThat(varies).isTrue();
  }

  @Test
  void rejectsBadValuesNamingTheFlag() {
    assertThatThrownBy(() -> Options.parse("--articles", "0")).hasMessageContaining("--articles");
    assertThatThrownBy(() -> Options.parse("--workers", "many")).hasMessageContaining("--workers");
    assertThatThrownBy(() -> Options.parse("--rate-limit", "1.2"))
        .hasMessageContaining("--rate-limit");
    assertThatThrownBy(() -> Options.parse("--resets")).hasMessageContaining("needs a value");
    assertThatThrownBy(() -> Options.parse("--colour", "red"))
        .hasMessageContaining("unknown flag --colour");
    assertThatThrownBy(() -> Options.parse("--rate-limit", "0.6", "--server-errors", "0.5"))
        .hasMessageContaining("at most 1");
  }

  @Test
  void helpIsAFlagAndTheUsageNamesEveryFlag() {
    assertThat(Options.parse("--help").help()).isTrue();
    assertThat(Options.usage())
        .contains("--articles", "--workers", "--rate-limit", "--server-errors", "--resets")
        .contains("--gateway-failures", "--seed", "--help");
  }
}
