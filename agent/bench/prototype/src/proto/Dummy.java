package proto;
public class Dummy { public Object send(Object a, Object b) throws java.io.IOException { return a; } }
