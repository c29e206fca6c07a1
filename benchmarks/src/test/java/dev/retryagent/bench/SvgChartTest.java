package dev.retryagent.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class SvgChartTest {
  @Test
  void roundsAxisMaximaUpToOneTwoTwoAndAHalfOrFiveTimesAPowerOfTen() {
    assertThat(SvgChart.niceCeiling(6618)).isEqualTo(10_000);
    assertThat(SvgChart.niceCeiling(200)).isEqualTo(200);
    assertThat(SvgChart.niceCeiling(201)).isEqualTo(250);
    assertThat(SvgChart.niceCeiling(20_859)).isEqualTo(25_000);
    assertThat(SvgChart.niceCeiling(0.3)).isEqualTo(0.5, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(SvgChart.niceCeiling(0)).isEqualTo(1);
  }

  @Test
  void writesWellFormedSvgWithOnePolylinePerSeriesScaledIntoThePlot() throws Exception {
    String svg =
        new SvgChart("Calls <vs> N", "setup & more", "clients", "calls")
            .series("none", new double[] {10, 100, 200}, new double[] {55, 2434, 6618})
            .series("full", new double[] {10, 100, 200}, new double[] {36, 769, 2007})
            .toSvg();

    Document doc =
        DocumentBuilderFactory.newInstance()
            .newDocumentBuilder()
            .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
    NodeList lines = doc.getElementsByTagName("polyline");
    assertThat(lines.getLength()).isEqualTo(2);
    assertThat(doc.getElementsByTagName("circle").getLength()).isEqualTo(6);
    assertThat(doc.getDocumentElement().getTextContent())
        .contains("Calls <vs> N", "setup & more", "none", "full", "10,000");
    // The largest value of the first series (6,618 of an axis to 10,000) sits below the top.
    String[] last = ((Element) lines.item(0)).getAttribute("points").split(" ")[2].split(",");
    double top = 50;
    double bottom = 400 - 55;
    double y = Double.parseDouble(last[1]);
    assertThat(y)
        .isCloseTo(bottom - (bottom - top) * 0.6618, org.assertj.core.data.Offset.offset(0.1));
  }

  @Test
  void refusesASeriesWhoseCoordinatesDoNotPair() {
    SvgChart chart = new SvgChart("t", "s", "x", "y");
    assertThatThrownBy(() -> chart.series("bad", new double[] {1, 2}, new double[] {1}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bad");
  }
}
