package io.ticketd.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict RFC 8259 JSON reader, small because ticketd's answers are a few small fixed shapes and the
 * library must need nothing but the JDK at run time. Values: {@code Map<String,Object>} (insertion
 * order, a repeated key keeps its last value), {@code List<Object>}, {@code String}, {@code Boolean},
 * {@link #NULL}, and numbers: an integer literal as {@code Long} when it fits in int64, else
 * {@code BigInteger}; any literal with a fraction or exponent as {@code BigDecimal} (exact, never a
 * double, so that no ID loses precision; an exponent beyond BigDecimal's range is refused). Everything else (trailing data, leading zeros, unescaped
 * control characters, bad escapes, NaN, comments, nesting past {@link #MAX_DEPTH}) is refused with
 * {@link IllegalArgumentException}. The tests check it against Jackson and Gson on random documents.
 */
final class Json {
    /** JSON's null, distinct from a missing key (Map.get returns Java null). */
    static final Object NULL = new Object() {
        @Override public String toString() { return "null"; }
    };

    /** Deeper documents are refused: no answer of ticketd nests past 5, and recursion is bounded. */
    static final int MAX_DEPTH = 512;

    private final String s;
    private int i;

    private Json(String s) { this.s = s; }

    static Object parse(String text) {
        Json p = new Json(text);
        p.ws();
        Object v = p.value(0);
        p.ws();
        if (p.i != p.s.length()) throw p.fail("data after the JSON value");
        return v;
    }

    private IllegalArgumentException fail(String why) {
        return new IllegalArgumentException("invalid JSON at offset " + i + ": " + why);
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
            i++;
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) throw fail("nested deeper than " + MAX_DEPTH);
        if (i >= s.length()) throw fail("unexpected end");
        char c = s.charAt(i);
        switch (c) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", NULL);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                throw fail("unexpected character " + describe(c));
        }
    }

    private static String describe(char c) {
        return c < 0x20 || c > 0x7e ? String.format("U+%04X", (int) c) : "'" + c + "'";
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) throw fail("expected " + word);
        i += word.length();
        return v;
    }

    private Map<String, Object> object(int depth) {
        i++; // {
        Map<String, Object> m = new LinkedHashMap<>();
        ws();
        if (i < s.length() && s.charAt(i) == '}') { i++; return m; }
        while (true) {
            ws();
            if (i >= s.length() || s.charAt(i) != '"') throw fail("expected a string key");
            String k = string();
            ws();
            if (i >= s.length() || s.charAt(i) != ':') throw fail("expected ':'");
            i++;
            ws();
            m.put(k, value(depth + 1));
            ws();
            if (i >= s.length()) throw fail("unexpected end in object");
            char c = s.charAt(i++);
            if (c == '}') return m;
            if (c != ',') throw fail("expected ',' or '}'");
        }
    }

    private List<Object> array(int depth) {
        i++; // [
        List<Object> a = new ArrayList<>();
        ws();
        if (i < s.length() && s.charAt(i) == ']') { i++; return a; }
        while (true) {
            ws();
            a.add(value(depth + 1));
            ws();
            if (i >= s.length()) throw fail("unexpected end in array");
            char c = s.charAt(i++);
            if (c == ']') return a;
            if (c != ',') throw fail("expected ',' or ']'");
        }
    }

    private String string() {
        i++; // "
        StringBuilder b = null;
        int start = i;
        while (true) {
            if (i >= s.length()) throw fail("unterminated string");
            char c = s.charAt(i);
            if (c == '"') {
                String out = b == null ? s.substring(start, i) : b.append(s, start, i).toString();
                i++;
                return out;
            }
            if (c < 0x20) throw fail("unescaped control character " + describe(c) + " in string");
            if (c != '\\') { i++; continue; }
            if (b == null) b = new StringBuilder();
            b.append(s, start, i);
            i++;
            if (i >= s.length()) throw fail("unterminated escape");
            char e = s.charAt(i++);
            switch (e) {
                case '"': b.append('"'); break;
                case '\\': b.append('\\'); break;
                case '/': b.append('/'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 't': b.append('\t'); break;
                case 'u': {
                    if (i + 4 > s.length()) throw fail("short \\u escape");
                    int v = 0;
                    for (int k = 0; k < 4; k++) {
                        int d = hex(s.charAt(i + k));
                        if (d < 0) throw fail("bad hex digit in \\u escape");
                        v = v * 16 + d;
                    }
                    i += 4;
                    b.append((char) v); // lone surrogates kept as they are, as Jackson and Gson do
                    break;
                }
                default: throw fail("bad escape \\" + describe(e));
            }
            start = i;
        }
    }

    private Number number() {
        int start = i;
        boolean integral = true;
        if (s.charAt(i) == '-') i++;
        if (i >= s.length()) throw fail("lone '-'");
        char c = s.charAt(i);
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            while (i < s.length() && isDigit(s.charAt(i))) i++;
        } else {
            throw fail("expected a digit");
        }
        if (i < s.length() && s.charAt(i) == '.') {
            integral = false;
            i++;
            if (i >= s.length() || !isDigit(s.charAt(i))) throw fail("expected a digit after '.'");
            while (i < s.length() && isDigit(s.charAt(i))) i++;
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            integral = false;
            i++;
            if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
            if (i >= s.length() || !isDigit(s.charAt(i))) throw fail("expected a digit in the exponent");
            while (i < s.length() && isDigit(s.charAt(i))) i++;
        }
        String lit = s.substring(start, i);
        if (!integral) {
            try {
                return new BigDecimal(lit);
            } catch (NumberFormatException | ArithmeticException ex) {
                // An exponent beyond BigDecimal's int scale: a limit RFC 8259 section 9 allows (Jackson
                // refuses some of these too, and reads others as infinity). No ticketd answer has one.
                throw fail("number out of range: " + lit);
            }
        }
        if (lit.length() <= 18) return Long.parseLong(lit); // fits: at most 18 digits (and a sign)
        BigInteger big = new BigInteger(lit);
        return big.bitLength() < 64 ? (Number) big.longValueExact() : big;
    }

    private static boolean isDigit(char c) { return c >= '0' && c <= '9'; }

    /** ASCII hex digits only: Character.digit would take other scripts' digits (U+1055 is 5). */
    private static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    /** A JSON string literal of v, for the few request bodies the client writes. */
    static String quote(String v) {
        StringBuilder b = new StringBuilder(v.length() + 2).append('"');
        for (int k = 0; k < v.length(); k++) {
            char c = v.charAt(k);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    // Typed access to the fields of an answer; a wrong or missing field is the server's bug,
    // reported as IllegalArgumentException and turned into a TicketdException by the caller.

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object v, String what) {
        if (v instanceof Map) return (Map<String, Object>) v;
        throw new IllegalArgumentException(what + " is not a JSON object");
    }

    static long getLong(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (v instanceof Long) return (Long) v;
        throw new IllegalArgumentException("field \"" + key + "\" is not an int64: " + v);
    }

    static long getLong(Map<String, Object> m, String key, long dflt) {
        Object v = m.get(key);
        if (v == null || v == NULL) return dflt;
        return getLong(m, key);
    }

    static String getString(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (v instanceof String) return (String) v;
        throw new IllegalArgumentException("field \"" + key + "\" is not a string: " + v);
    }

    /** The string at key, or "" when absent, null or not a string (problem documents are lenient). */
    static String optString(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v instanceof String ? (String) v : "";
    }

    static List<?> getArray(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (v instanceof List) return (List<?>) v;
        throw new IllegalArgumentException("field \"" + key + "\" is not an array");
    }
}
