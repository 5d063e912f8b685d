package io.ticketd.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A client's handles of one kind, one per name: asking again for a name gives the handle made
 * before (as Hazelcast's getFlakeIdGenerator(name) does), so that a call site that asks each time
 * ({@code c.snowflake("events").next()}) neither leaks handles nor fetches a batch per call.
 *
 * <p>Asking with options other than the handle's is refused ({@link InvalidArgumentException}
 * naming what differs) rather than answered with the handle as it is: the caller asked for a cache
 * tuned one way and would silently get another, and which options won would depend on which call
 * site ran first. Not thread-safe: the client calls it under its lock.
 *
 * @param <O> the options type
 * @param <H> the handle type
 */
final class Handles<O, H> {
    private final String kind;
    private final Function<H, O> optionsOf;
    private final BiFunction<O, O, String> differences;
    private final Map<String, H> byName = new HashMap<>();

    /**
     * @param kind what a name names, for the error ("sequence", "Snowflake namespace")
     * @param differences (asked, the handle's) to what differs, "" if nothing
     */
    Handles(String kind, Function<H, O> optionsOf, BiFunction<O, O, String> differences) {
        this.kind = kind;
        this.optionsOf = optionsOf;
        this.differences = differences;
    }

    /** The handle of name: the one made before (its options must be these), else make's. */
    H get(String name, O options, Supplier<H> make) {
        H h = byName.get(name);
        if (h == null) {
            h = make.get();
            byName.put(name, h);
            return h;
        }
        String d = differences.apply(options, optionsOf.apply(h));
        if (!d.isEmpty()) {
            throw new InvalidArgumentException(kind + " \"" + name + "\" has a handle already, made with other options: " + d
                + "; a client keeps one handle per name: ask with the same options, or share the handle");
        }
        return h;
    }

    /** Forgets h, if it is still the handle of name. */
    void remove(String name, H h) { byName.remove(name, h); }

    /** Every handle, forgotten. */
    List<H> removeAll() {
        List<H> all = new ArrayList<>(byName.values());
        byName.clear();
        return all;
    }

    int size() { return byName.size(); }
}
