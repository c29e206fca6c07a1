package dev.retryagent.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.policy.Mode;
import org.junit.jupiter.api.Test;

class ConfigSeamTest {
  @Test
  void noArgumentMeansBuiltInDefaultsInEnforceMode() {
    AgentSettings settings = ConfigSeam.loadConfig(null);

    assertThat(settings.mode()).isEqualTo(Mode.ENFORCE);
    assertThat(settings.jdkHttp()).isTrue();
    assertThat(settings.describe()).isEqualTo("config=built-in defaults, mode=enforce");
  }

  @Test
  void modeIsTakenFromTheKeyValueArgument() {
    assertThat(ConfigSeam.loadConfig("mode=observe").mode()).isEqualTo(Mode.OBSERVE);
    assertThat(ConfigSeam.loadConfig("config=a.yml, mode=OFF").mode()).isEqualTo(Mode.OFF);
  }

  @Test
  void aNamedFileThatIsNotReadYetSaysSo() {
    assertThat(ConfigSeam.loadConfig("conf/retry.yml").source())
        .isEqualTo("conf/retry.yml (not read: file loading is not wired yet)");
    assertThat(ConfigSeam.loadConfig("config=x.yml,mode=enforce").source()).startsWith("x.yml ");
  }

  @Test
  void anUnknownModeIsRefusedWithTheAllowedValues() {
    assertThatThrownBy(() -> ConfigSeam.loadConfig("mode=sometimes"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("mode=sometimes")
        .hasMessageContaining("enforce, observe or off");
  }
}
