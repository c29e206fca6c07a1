package proto;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;
public class JdkAdvice {
  @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class, suppress = Throwable.class)
  static Object enter(@Advice.This Object c, @Advice.Argument(0) Object r, @Advice.Argument(1) Object h) {
    return bridge.Bridge.enter(c, r, h);
  }
  @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
  static void exit(@Advice.Enter Object e, @Advice.Return(readOnly = false, typing = Assigner.Typing.DYNAMIC) Object ret) {
    if (e != null) ret = e;
  }
}
