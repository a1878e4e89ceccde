package dev.idpool.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the service answers with, read without a library: objects as {@code Map}, arrays
 * as {@code List}, strings, numbers as {@code Long} when integral (else {@code Double}), booleans
 * and null. Throws {@link IllegalArgumentException} on anything else.
 */
final class Json {
  private final String s;
  private int i;

  private Json(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    Json p = new Json(text);
    p.space();
    Object v = p.value();
    p.space();
    if (p.i != p.s.length()) throw p.bad("trailing characters");
    return v;
  }

  /** A JSON string literal of {@code value}. */
  static String quote(String value) {
    StringBuilder b = new StringBuilder(value.length() + 2).append('"');
    for (int k = 0; k < value.length(); k++) {
      char c = value.charAt(k);
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  private IllegalArgumentException bad(String why) {
    return new IllegalArgumentException("not JSON at " + i + ": " + why);
  }

  private void space() {
    while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++;
  }

  private Object value() {
    if (i >= s.length()) throw bad("end of text");
    char c = s.charAt(i);
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return string();
    if (s.startsWith("true", i)) {
      i += 4;
      return Boolean.TRUE;
    }
    if (s.startsWith("false", i)) {
      i += 5;
      return Boolean.FALSE;
    }
    if (s.startsWith("null", i)) {
      i += 4;
      return null;
    }
    return number();
  }

  private Map<String, Object> object() {
    Map<String, Object> m = new LinkedHashMap<>();
    i++;
    space();
    if (i < s.length() && s.charAt(i) == '}') {
      i++;
      return m;
    }
    for (; ; ) {
      space();
      if (i >= s.length() || s.charAt(i) != '"') throw bad("expected a key");
      String key = string();
      space();
      if (i >= s.length() || s.charAt(i) != ':') throw bad("expected ':'");
      i++;
      space();
      m.put(key, value());
      space();
      if (i >= s.length()) throw bad("end of text in an object");
      char c = s.charAt(i++);
      if (c == '}') return m;
      if (c != ',') throw bad("expected ',' or '}'");
    }
  }

  private List<Object> array() {
    List<Object> l = new ArrayList<>();
    i++;
    space();
    if (i < s.length() && s.charAt(i) == ']') {
      i++;
      return l;
    }
    for (; ; ) {
      space();
      l.add(value());
      space();
      if (i >= s.length()) throw bad("end of text in an array");
      char c = s.charAt(i++);
      if (c == ']') return l;
      if (c != ',') throw bad("expected ',' or ']'");
    }
  }

  private String string() {
    StringBuilder b = new StringBuilder();
    i++;
    while (i < s.length()) {
      char c = s.charAt(i++);
      if (c == '"') return b.toString();
      if (c != '\\') {
        b.append(c);
        continue;
      }
      if (i >= s.length()) break;
      char e = s.charAt(i++);
      switch (e) {
        case 'b': b.append('\b'); break;
        case 'f': b.append('\f'); break;
        case 'n': b.append('\n'); break;
        case 'r': b.append('\r'); break;
        case 't': b.append('\t'); break;
        case 'u':
          if (i + 4 > s.length()) throw bad("short \\u escape");
          b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
          break;
        default: b.append(e);
      }
    }
    throw bad("unterminated string");
  }

  private Object number() {
    int start = i;
    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
    String text = s.substring(start, i);
    if (text.isEmpty()) throw bad("unexpected character");
    try {
      if (text.indexOf('.') < 0 && text.indexOf('e') < 0 && text.indexOf('E') < 0) return Long.parseLong(text);
      return Double.parseDouble(text);
    } catch (NumberFormatException err) {
      throw bad("bad number " + text);
    }
  }
}
