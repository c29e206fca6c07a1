package proto;

/*
 * Throw-away prototype agent used only by agent/bench/startup.sh --prototypes to compare ways of
 * hooking HttpClientImpl.send (design record for docs/BENCHMARKS.md; not shipped). Switches:
 *   -Dp.mode=none|naive|lazy|pre   none: only append the bridge; naive: one-hook AgentBuilder;
 *                                  lazy: plain ClassFileTransformer, work on first target load;
 *                                  pre: lazy + background pre-transformation of the jimage bytes
 *   -Dp.xf=bb|direct|asm           Advice via ByteBuddy.decorate / Advice as AsmVisitorWrapper /
 *                                  hand-written prologue on Byte Buddy's bundled ASM
 *   -Dp.loader=sys|custom|boot     where the Byte Buddy + transformer classes are loaded from
 *   -Dp.bridge=append|none         append the bridge jar to the bootstrap path or not
 */
import java.lang.instrument.Instrumentation;
import java.net.*;
import java.util.jar.JarFile;
public class Premain {
  public static void premain(String args, Instrumentation inst) throws Exception {
    long t0 = System.nanoTime();
    String ld = System.getProperty("p.loader", "sys");
    String jar = System.getProperty("p.jar");
    ClassLoader cl;
    if (ld.equals("boot")) { inst.appendToBootstrapClassLoaderSearch(new JarFile(System.getProperty("p.impljar"))); cl = null; }
    else if (ld.equals("custom")) cl = new URLClassLoader(new URL[]{new java.io.File(System.getProperty("p.impljar")).toURI().toURL()}, ClassLoader.getPlatformClassLoader());
    else cl = Premain.class.getClassLoader();
    Class<?> impl = Class.forName("proto.Impl", true, cl);
    impl.getMethod("install", String.class, Instrumentation.class).invoke(null, args, inst);
    if (Boolean.getBoolean("p.time")) System.err.println("premain ms " + (System.nanoTime()-t0)/1e6);
  }
}
