package dev.retryagent.internal.observe;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.ReflectionException;

/**
 * A read-only MBean whose attributes are computed on each read from a supplier of name/value pairs:
 * the attribute list follows the counter table ({@link Stat}, give-up reasons) without one getter
 * per counter.
 */
final class StatsMBean implements DynamicMBean {
  private final MBeanInfo info;
  private final Supplier<Map<String, Object>> values;

  StatsMBean(
      String description,
      List<MBeanAttributeInfo> attributes,
      Supplier<Map<String, Object>> values) {
    this.info =
        new MBeanInfo(
            StatsMBean.class.getName(),
            description,
            attributes.toArray(new MBeanAttributeInfo[0]),
            null,
            null,
            null);
    this.values = values;
  }

  static MBeanAttributeInfo attribute(String name, String type, String description) {
    return new MBeanAttributeInfo(name, type, description, true, false, false);
  }

  @Override
  public Object getAttribute(String name) throws AttributeNotFoundException {
    Map<String, Object> v = values.get();
    if (!v.containsKey(name)) {
      throw new AttributeNotFoundException("no attribute " + name);
    }
    return v.get(name);
  }

  @Override
  public AttributeList getAttributes(String[] names) {
    Map<String, Object> v = values.get();
    AttributeList list = new AttributeList();
    for (String n : names) {
      if (v.containsKey(n)) {
        list.add(new Attribute(n, v.get(n)));
      }
    }
    return list;
  }

  @Override
  public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
    throw new AttributeNotFoundException(attribute.getName() + " is read-only");
  }

  @Override
  public AttributeList setAttributes(AttributeList attributes) {
    return new AttributeList();
  }

  @Override
  public Object invoke(String action, Object[] params, String[] signature)
      throws ReflectionException {
    throw new ReflectionException(new NoSuchMethodException(action), "no operations");
  }

  @Override
  public MBeanInfo getMBeanInfo() {
    return info;
  }
}
