package dev.retryagent.it.apps;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.GiveUpReason;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

class SoakAppTest {
  /**
   * The soak prints the route attributes it names, so a give-up reason missing from the list is a
   * count nobody sees; the route MBean names each reason GaveUp + its name in camel case.
   */
  @Test
  void theSoakReadsTheGiveUpCountOfEveryReason() {
    List<String> expected = new ArrayList<>();
    for (GiveUpReason r : GiveUpReason.values()) {
      StringBuilder b = new StringBuilder("GaveUp");
      for (String part : r.name().split("_")) {
        b.append(part.charAt(0)).append(part.substring(1).toLowerCase(Locale.ROOT));
      }
      expected.add(b.toString());
    }
    assertThat(SoakApp.ROUTE_ATTRIBUTES).contains(expected.toArray(new String[0]));
  }
}
