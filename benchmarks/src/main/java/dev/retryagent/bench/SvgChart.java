package dev.retryagent.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A small line chart written as SVG: one polyline with markers per series, linear axes from zero
 * with round ticks, a legend. Enough to draw a benchmark's curves into {@code docs/} without a
 * plotting library.
 */
public final class SvgChart {
  private static final int WIDTH = 640;
  private static final int HEIGHT = 400;
  private static final int LEFT = 80;
  private static final int RIGHT = 170;
  private static final int TOP = 50;
  private static final int BOTTOM = 55;
  // Distinguishable for the common kinds of colour blindness (Okabe and Ito).
  private static final String[] COLOURS = {
    "#000000", "#E69F00", "#0072B2", "#009E73", "#CC79A7", "#D55E00", "#56B4E9"
  };

  private final String title;
  private final String subtitle;
  private final String xLabel;
  private final String yLabel;
  private final List<Series> series = new ArrayList<>();

  private static final class Series {
    final String name;
    final double[] x;
    final double[] y;

    Series(String name, double[] x, double[] y) {
      this.name = name;
      this.x = x.clone();
      this.y = y.clone();
    }
  }

  /**
   * @param subtitle a second, smaller line under the title (the set-up of the measurement)
   */
  public SvgChart(String title, String subtitle, String xLabel, String yLabel) {
    this.title = title;
    this.subtitle = subtitle;
    this.xLabel = xLabel;
    this.yLabel = yLabel;
  }

  /** Adds a curve; {@code x} and {@code y} have the same length. */
  public SvgChart series(String name, double[] x, double[] y) {
    if (x.length != y.length) {
      throw new IllegalArgumentException(name + ": " + x.length + " x values, " + y.length + " y");
    }
    series.add(new Series(name, x, y));
    return this;
  }

  public void write(Path file) throws IOException {
    Files.writeString(file, toSvg(), StandardCharsets.UTF_8);
  }

  /** The chart as a standalone SVG document. */
  public String toSvg() {
    double xMax = niceCeiling(max(true));
    double yMax = niceCeiling(max(false));
    int plotW = WIDTH - LEFT - RIGHT;
    int plotH = HEIGHT - TOP - BOTTOM;
    StringBuilder svg = new StringBuilder();
    svg.append(
            String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                    + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
                WIDTH,
                HEIGHT,
                WIDTH,
                HEIGHT))
        .append(
            String.format(
                Locale.ROOT,
                "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>%n",
                WIDTH,
                HEIGHT));
    text(svg, WIDTH / 2.0, 20, "middle", "font-size=\"15\" font-weight=\"bold\"", title);
    text(svg, WIDTH / 2.0, 36, "middle", "font-size=\"11\" fill=\"#444444\"", subtitle);
    for (int i = 0; i <= 5; i++) {
      double xv = xMax * i / 5;
      double yv = yMax * i / 5;
      double px = LEFT + plotW * i / 5.0;
      double py = TOP + plotH - plotH * i / 5.0;
      line(svg, LEFT, py, LEFT + plotW, py, "#dddddd");
      line(svg, px, TOP + plotH, px, TOP + plotH + 5, "#000000");
      text(svg, px, TOP + plotH + 20, "middle", "", number(xv));
      text(svg, LEFT - 8, py + 4, "end", "", number(yv));
    }
    line(svg, LEFT, TOP, LEFT, TOP + plotH, "#000000");
    line(svg, LEFT, TOP + plotH, LEFT + plotW, TOP + plotH, "#000000");
    text(svg, LEFT + plotW / 2.0, HEIGHT - 12, "middle", "", xLabel);
    svg.append(
        String.format(
            Locale.ROOT,
            "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">"
                + "%s</text>%n",
            TOP + plotH / 2.0,
            TOP + plotH / 2.0,
            escape(yLabel)));
    for (int s = 0; s < series.size(); s++) {
      Series ser = series.get(s);
      String colour = COLOURS[s % COLOURS.length];
      StringBuilder points = new StringBuilder();
      for (int i = 0; i < ser.x.length; i++) {
        double px = LEFT + plotW * ser.x[i] / xMax;
        double py = TOP + plotH - plotH * ser.y[i] / yMax;
        points.append(String.format(Locale.ROOT, "%.1f,%.1f ", px, py));
        svg.append(
            String.format(
                Locale.ROOT,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>%n",
                px,
                py,
                colour));
      }
      svg.append(
          String.format(
              Locale.ROOT,
              "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>%n",
              points.toString().trim(),
              colour));
      double ly = TOP + 10 + 20 * s;
      line(svg, WIDTH - RIGHT + 15, ly, WIDTH - RIGHT + 40, ly, colour, 2);
      text(svg, WIDTH - RIGHT + 46, ly + 4, "start", "", ser.name);
    }
    return svg.append("</svg>\n").toString();
  }

  private double max(boolean x) {
    double m = 0;
    for (Series s : series) {
      for (double v : x ? s.x : s.y) {
        m = Math.max(m, v);
      }
    }
    return m;
  }

  /** The smallest of 1, 2, 2.5, 5 x 10^k at or above {@code v}: five round ticks. */
  static double niceCeiling(double v) {
    if (v <= 0) {
      return 1;
    }
    double magnitude = Math.pow(10, Math.floor(Math.log10(v)));
    for (double step : new double[] {1, 2, 2.5, 5, 10}) {
      if (step * magnitude >= v) {
        return step * magnitude;
      }
    }
    return 10 * magnitude;
  }

  private static String number(double v) {
    return v == Math.rint(v)
        ? String.format(Locale.ROOT, "%,d", (long) v)
        : String.format(Locale.ROOT, "%.1f", v);
  }

  private static void line(
      StringBuilder svg, double x1, double y1, double x2, double y2, String c) {
    line(svg, x1, y1, x2, y2, c, 1);
  }

  private static void line(
      StringBuilder svg, double x1, double y1, double x2, double y2, String c, int width) {
    svg.append(
        String.format(
            Locale.ROOT,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\""
                + " stroke-width=\"%d\"/>%n",
            x1,
            y1,
            x2,
            y2,
            c,
            width));
  }

  private static void text(
      StringBuilder svg, double x, double y, String anchor, String attributes, String content) {
    svg.append(
        String.format(
            Locale.ROOT,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>%s</text>%n",
            x,
            y,
            anchor,
            attributes,
            escape(content)));
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
