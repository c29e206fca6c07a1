package bridge;
public final class Bridge {
  public static volatile java.util.function.Function<Object[], Object> handler;
  public static Object enter(Object c, Object r, Object h) {
    java.util.function.Function<Object[], Object> x = handler;
    return x == null ? null : x.apply(new Object[] {c, r, h});
  }
}
