package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * The Kubernetes recipe (docs/kubernetes.md) stays true: the configuration inside its ConfigMap is
 * valid, as {@code retry-agent validate} would say in the CI step the recipe recommends, and the
 * Deployment points {@code -javaagent} at the jar and the file where its volumes put them.
 */
class KubernetesRecipeTest {
  private static final Path RECIPE = Path.of("..", "docs", "kubernetes");

  @TempDir Path dir;

  @Test
  void theConfigMapHoldsAValidConfigurationThatExposesPrometheusForTheScrapeAnnotation()
      throws Exception {
    Map<String, Object> configMap = yaml(RECIPE.resolve("configmap.yaml"));
    @SuppressWarnings("unchecked")
    String text = ((Map<String, String>) configMap.get("data")).get("config.yml");
    Path file = Files.writeString(dir.resolve("config.yml"), text);

    AgentConfig config = ConfigLoader.load(file, Map.of());

    assertThat(config.routes()).extracting(Route::name).containsExactly("llm", "payments");
    assertThat(config.reload()).isTrue();
    assertThat(config.metrics().prometheusEnabled()).isTrue();
    assertThat(config.metrics().prometheusPort()).isEqualTo(9464);
    assertThat(ConfigFiles.read(RECIPE.resolve("deployment.yaml")))
        .contains("prometheus.io/port: \"9464\"", "containerPort: 9464");
  }

  @Test
  @SuppressWarnings("unchecked")
  void theDeploymentLoadsTheAgentFromTheInitContainersVolumeWithTheConfigMapsFile()
      throws Exception {
    Map<String, Object> deployment = yaml(RECIPE.resolve("deployment.yaml"));
    Map<String, Object> pod =
        (Map<String, Object>) ((Map<String, Object>) deployment.get("spec")).get("template");
    Map<String, Object> spec = (Map<String, Object>) pod.get("spec");
    Map<String, Object> app = ((List<Map<String, Object>>) spec.get("containers")).get(0);
    String options = (String) ((List<Map<String, Object>>) app.get("env")).get(0).get("value");
    List<Map<String, Object>> mounts = (List<Map<String, Object>>) app.get("volumeMounts");

    assertThat(options)
        .isEqualTo("-javaagent:/opt/retry-agent/retry-agent.jar=/etc/retry-agent/config.yml");
    assertThat(mounts)
        .extracting(m -> m.get("mountPath"))
        .containsExactly("/opt/retry-agent", "/etc/retry-agent");
    // A subPath mount is a copy Kubernetes never updates: reload would never see an edit.
    assertThat(mounts).allSatisfy(m -> assertThat(m).doesNotContainKey("subPath"));
    Map<String, Object> init = ((List<Map<String, Object>>) spec.get("initContainers")).get(0);
    assertThat((List<String>) init.get("command"))
        .last()
        .isEqualTo("/opt/retry-agent/retry-agent.jar");
  }

  private static Map<String, Object> yaml(Path file) {
    return new Yaml(new LoaderOptions()).load(ConfigFiles.read(file));
  }
}
