package dev.retryagent.demo;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A news article to process. The demo makes its own, the same ones on every run. */
final class Article {
  private static final String[] HEADLINES = {
    "Central bank holds rates steady as inflation cools",
    "Port strike delays container traffic for a third day",
    "Solar startup reports record growth in home installations",
    "Regional airline announces layoffs after fuel costs rise",
    "City council approves new tram line to the airport",
    "Chipmaker beats forecasts on strong demand for data centres",
    "Storm warning issued for the northern coast",
    "Hospital trial shows breakthrough in early cancer screening",
    "Carmaker issues recall over faulty brake sensors",
    "Local football club wins the cup after penalty shoot-out",
    "Grocery chain warns of egg shortage before holidays",
    "Museum opens exhibition of restored medieval maps",
    "Cloud provider outage disrupts online banking for hours",
    "Wheat harvest recovers after two dry summers",
    "Retailer cuts prices as consumer spending falls",
    "University spin-off raises funds for battery recycling",
    "Regulator fines telecom over misleading contracts",
    "Tourism rebounds with record summer bookings",
    "Water utility delays pipe renewal over budget crisis",
    "Library network extends opening hours in suburbs",
  };

  private static final String[] BODIES = {
    "Analysts expect the decision to shape markets for months.",
    "Officials said more details would follow later this week.",
    "Residents and businesses reacted with a mix of relief and caution.",
    "The company will publish full figures at its annual meeting.",
  };

  private final int id;
  private final String title;
  private final String text;

  private Article(int id, String title, String text) {
    this.id = id;
    this.title = title;
    this.text = text;
  }

  /** Articles 1..n; after the twentieth the headlines come round again as updates. */
  static List<Article> first(int n) {
    List<Article> articles = new ArrayList<>(n);
    for (int id = 1; id <= n; id++) {
      String headline = HEADLINES[(id - 1) % HEADLINES.length];
      int round = (id - 1) / HEADLINES.length;
      String title = round == 0 ? headline : headline + " (update " + round + ")";
      articles.add(new Article(id, title, title + ". " + BODIES[id % BODIES.length]));
    }
    return Collections.unmodifiableList(articles);
  }

  int id() {
    return id;
  }

  String title() {
    return title;
  }

  String text() {
    return text;
  }
}
