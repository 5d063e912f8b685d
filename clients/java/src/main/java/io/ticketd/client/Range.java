package io.ticketd.client;

/** An inclusive range of IDs, {@code first..last}. */
public record Range(long first, long last) {
    public Range {
        if (last < first) throw new IllegalArgumentException("range " + first + ".." + last + " is empty");
    }

    /** How many IDs the range holds. */
    public long size() { return last - first + 1; }

    public boolean contains(long id) { return id >= first && id <= last; }

    @Override public String toString() { return first + "-" + last; }
}
