package dev.retryagent.agent.tooling;

import dev.retryagent.agent.runtime.AgentLog;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What every instrumentation's transformer does: a name test on every class the JVM defines, the
 * rewrite of the few classes it names, a count of the classes really rewritten, and the start-up
 * line's fragment for the client ({@code <client> armed (...)} until a class has been rewritten,
 * {@code <client> hooked (...)} from then on, {@code <client> NOT hooked (why)}).
 *
 * <p>A subclass names its classes ({@link #matches}), decides per module and loader ({@link
 * #accepts}), rewrites ({@link #rewrite}) and reports a failure ({@link #failed}); a class that
 * cannot be rewritten stays unchanged: that client runs without retries, never broken.
 *
 * <p>Thread-safe: the JVM calls {@link #transform} from any thread that defines a class.
 */
public abstract class HookTransformer implements ClassFileTransformer {
  private final String client;
  private final String hooks;
  private final String targets;
  private final AtomicInteger hooked = new AtomicInteger();
  private final AtomicInteger unlinkable = new AtomicInteger();

  /**
   * The thread retransforming the classes loaded before ({@link #retransformLoaded}), and the
   * classes rewritten in its batch so far: the JVM takes the batch all or nothing, so a refusal
   * takes those back out of the count.
   */
  private volatile Thread batchThread;

  private int batchRewritten; // only by batchThread

  /**
   * While {@link #installAll} runs: the classes rewritten as they loaded, after this transformer
   * was added and perhaps before the one look at the loaded classes, as loader and binary name in
   * turn (guarded by this; null when none). Such a class is already hooked: it is left out of the
   * retransformation, where a second rewrite would count it twice and a refused batch would take it
   * back out though its load-time rewrite stands.
   */
  private volatile boolean installing;

  private ArrayList<Object> rewrittenAtLoad;

  /**
   * @param client the client's name in the start-up line ({@code jdk-http}, {@code okhttp})
   * @param hooks the hooked methods, for the start-up line ({@code send, sendAsync})
   * @param targets the rewritten classes, for a "NOT hooked" line ({@code HttpClientImpl})
   */
  protected HookTransformer(String client, String hooks, String targets) {
    this.client = client;
    this.hooks = hooks;
    this.targets = targets;
  }

  /**
   * Whether code injected into a class of {@code loader} links to {@code
   * java.lang.RetryAgentBridge}; said once per transformer when it does not. Every loader must
   * delegate {@code java.*} to the bootstrap loader, so this refuses only a loader that refuses
   * even that, where the injected calls could not link and a hooked constructor would break the
   * application's. Loaders that hide the agent's own packages, as OSGi and JBoss Modules may, still
   * delegate {@code java.*} and are hooked.
   */
  protected final boolean linksToBridge(ClassLoader loader) {
    if (BridgeInstaller.isVisibleTo(loader)) {
      return true;
    }
    if (unlinkable.getAndIncrement() == 0) {
      AgentLog.error(
          client
              + " NOT hooked in "
              + LoaderNames.describe(loader)
              + ", which does not delegate "
              + BridgeInstaller.NAME
              + " to the bootstrap loader: its clients run without retries");
    }
    return false;
  }

  @Override
  public final byte[] transform(
      Module module,
      ClassLoader loader,
      String className,
      Class<?> classBeingRedefined,
      ProtectionDomain protectionDomain,
      byte[] classfileBuffer) {
    if (!matches(className) || !accepts(module, loader, className, protectionDomain)) {
      return null;
    }
    try {
      byte[] rewritten = rewrite(className, classfileBuffer);
      if (rewritten != null) {
        // a class left unchanged on purpose (url-connection's activation) hooks nothing
        hooked.incrementAndGet();
        if (classBeingRedefined != null && batchThread == Thread.currentThread()) {
          batchRewritten++;
        } else if (classBeingRedefined == null && installing) {
          rewroteAtLoad(loader, className);
        }
        rewritten(loader, className);
      }
      return rewritten;
    } catch (Throwable t) {
      failed(loader, className, t);
      return null;
    }
  }

  private synchronized void rewroteAtLoad(ClassLoader loader, String internalName) {
    // asked again under the monitor: installAll may have ended since the caller's look, and a
    // list made now would never be cleared (it would hold the loader for the JVM's life)
    if (!installing) {
      return;
    }
    if (rewrittenAtLoad == null) {
      rewrittenAtLoad = new ArrayList<>();
    }
    rewrittenAtLoad.add(loader);
    rewrittenAtLoad.add(internalName.replace('/', '.'));
  }

  /** Whether {@code loaded} was rewritten as it loaded while {@link #installAll} ran. */
  private synchronized boolean hookedAtLoad(Class<?> loaded) {
    if (rewrittenAtLoad == null) {
      return false;
    }
    for (int i = 0; i < rewrittenAtLoad.size(); i += 2) {
      if (rewrittenAtLoad.get(i) == loaded.getClassLoader()
          && loaded.getName().equals(rewrittenAtLoad.get(i + 1))) {
        return true;
      }
    }
    return false;
  }

  /**
   * True for the internal names of the classes this hook rewrites ({@code null} is possible).
   * Called for every class the JVM defines, the agent's own included: a name test that touches no
   * other class, since a class it needed would be defined from inside its own transformation (a
   * duplicate definition); the rewriting classes load only when the first target does.
   */
  protected abstract boolean matches(String internalName);

  /**
   * Whether a matching class, defined in {@code module} by {@code loader} ({@code null}: the
   * bootstrap loader), is to be rewritten; a subclass reports the classes it leaves alone itself.
   */
  protected abstract boolean accepts(Module module, ClassLoader loader, String internalName);

  /**
   * {@link #accepts(Module, ClassLoader, String)}, told where the class comes from too ({@code
   * domain}, its code source; null when the JVM gives none): for a subclass that must tell one copy
   * of a library in {@code loader} from another that {@code loader} also sees.
   */
  protected boolean accepts(
      Module module, ClassLoader loader, String internalName, ProtectionDomain domain) {
    return accepts(module, loader, internalName);
  }

  /**
   * The rewritten class file, or null to leave the class unchanged (not counted as hooked).
   *
   * @throws RuntimeException when the class is not the one expected (a method or field missing), in
   *     which case it stays unchanged
   */
  protected abstract byte[] rewrite(String internalName, byte[] classfile);

  /**
   * {@code loader} defines (or redefines) {@code internalName} as {@link #rewrite} returned it, a
   * moment from now. Nothing by default.
   */
  protected void rewritten(ClassLoader loader, String internalName) {}

  /**
   * The JVM refused the retransformation of {@code loaded}, all of it: whatever {@link #rewritten}
   * recorded for those classes is to be forgotten. Nothing by default.
   */
  protected void refused(Class<?> loaded) {}

  /**
   * A matching class could not be rewritten and stays unchanged: report it (once, not per class).
   */
  protected abstract void failed(ClassLoader loader, String internalName, Throwable cause);

  /** Why this client runs without retries after a failed rewrite, or null. */
  protected abstract String notHookedReason();

  /**
   * Whether {@code loaded}, a class defined before this transformer was added, is to be rewritten
   * now. Asked for every class loaded at that point (hundreds in {@code premain}): a name test that
   * allocates nothing first.
   */
  protected abstract boolean retransforms(Class<?> loaded);

  /** Classes rewritten so far. */
  public final int hooked() {
    return hooked.get();
  }

  /**
   * The start-up line's fragment now: {@code <client> hooked (<hooks>)} once a class has been
   * rewritten, {@code <client> armed (<hooks>)} while the transformer waits for its classes.
   */
  public final String status() {
    return client + (hooked.get() > 0 ? " hooked (" : " armed (") + hooks + ")";
  }

  /**
   * Adds each transformer, then rewrites the target classes already loaded (a late attach, or
   * another agent loaded them first; clients made before keep what they have). One look at the
   * loaded classes serves all (each look costs a millisecond or two at start-up: a thousand
   * classes, each named on its first look): every transformer is added first, so a class loaded
   * meanwhile is rewritten as it loads, and the rest are in the one look. A null transformer is
   * skipped.
   *
   * @return each transformer's start-up line fragment, in order (null for a null transformer)
   */
  public static String[] installAll(Instrumentation inst, HookTransformer... transformers) {
    for (HookTransformer t : transformers) {
      if (t != null) {
        t.installing = true;
        inst.addTransformer(t, true);
      }
    }
    Class<?>[] all = inst.getAllLoadedClasses();
    String[] status = new String[transformers.length];
    for (int i = 0; i < transformers.length; i++) {
      HookTransformer t = transformers[i];
      if (t != null) {
        try {
          status[i] = t.retransformLoaded(inst, all);
        } finally {
          // both under the monitor rewroteAtLoad takes: no record is added after this clears
          synchronized (t) {
            t.installing = false;
            t.rewrittenAtLoad = null; // holds loaders
          }
        }
      }
    }
    return status;
  }

  /** Rewrites this transformer's targets among {@code all}; the start-up line's fragment. */
  private String retransformLoaded(Instrumentation inst, Class<?>[] all) {
    List<Class<?>> loaded = new ArrayList<>();
    for (Class<?> c : all) {
      // one rewritten as it loaded, just now, is hooked already
      if (retransforms(c) && !hookedAtLoad(c)) {
        loaded.add(c);
      }
    }
    if (loaded.isEmpty()) {
      return status();
    }
    if (!inst.isRetransformClassesSupported()) {
      return client
          + " NOT hooked ("
          + targets
          + " already loaded and retransformation unsupported)";
    }
    batchRewritten = 0;
    batchThread = Thread.currentThread();
    try {
      inst.retransformClasses(loaded.toArray(new Class<?>[0]));
    } catch (Throwable t) {
      // all or nothing: no class of the batch was changed
      hooked.addAndGet(-batchRewritten);
      for (Class<?> c : loaded) {
        refused(c);
      }
      return client
          + " NOT hooked (retransforming "
          + targets
          + " failed: "
          + CauseLine.of(t)
          + ")";
    } finally {
      batchThread = null;
    }
    String reason = notHookedReason();
    return reason == null ? status() : client + " NOT hooked (" + reason + ")";
  }
}
