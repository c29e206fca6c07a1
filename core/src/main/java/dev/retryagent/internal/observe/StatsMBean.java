package dev.retryagent.internal.observe;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.ReflectionException;

/**
 * A read-only MBean whose attributes are computed on each read by a {@link Reader}: the attribute
 * list follows the counter table ({@link Stat}, give-up reasons) without one getter per counter. A
 * read computes the attributes asked for and no other: a console that reads thirty attributes of a
 * thousand host MBeans one at a time must not compute every attribute (a copy of every breaker
 * among them) thirty thousand times.
 */
final class StatsMBean implements DynamicMBean {
  /** Computes attributes of the MBean. */
  interface Reader {
    /**
     * Puts the value of each of {@code names} into {@code out}, and computes nothing else.
     *
     * @param names attributes of the MBean, at least one
     */
    void read(Set<String> names, Map<String, Object> out);
  }

  private final MBeanInfo info;
  private final Set<String> names = new HashSet<>();
  private final Reader reader;

  StatsMBean(String description, List<MBeanAttributeInfo> attributes, Reader reader) {
    this.info =
        new MBeanInfo(
            StatsMBean.class.getName(),
            description,
            attributes.toArray(new MBeanAttributeInfo[0]),
            null,
            null,
            null);
    for (MBeanAttributeInfo a : attributes) {
      names.add(a.getName());
    }
    this.reader = reader;
  }

  static MBeanAttributeInfo attribute(String name, String type, String description) {
    return new MBeanAttributeInfo(name, type, description, true, false, false);
  }

  @Override
  public Object getAttribute(String name) throws AttributeNotFoundException {
    if (!names.contains(name)) {
      throw new AttributeNotFoundException("no attribute " + name);
    }
    Map<String, Object> v = new HashMap<>(2);
    reader.read(Collections.singleton(name), v);
    return v.get(name);
  }

  @Override
  public AttributeList getAttributes(String[] asked) {
    // One read for the set: the attributes of one call come from one snapshot of the counters.
    Set<String> known = new LinkedHashSet<>();
    for (String n : asked) {
      if (names.contains(n)) {
        known.add(n);
      }
    }
    AttributeList list = new AttributeList();
    if (known.isEmpty()) {
      return list;
    }
    Map<String, Object> v = new HashMap<>();
    reader.read(known, v);
    for (String n : asked) {
      if (known.contains(n)) {
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
