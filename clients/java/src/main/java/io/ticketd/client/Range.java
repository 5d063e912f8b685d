package io.ticketd.client;

/**
 * An inclusive range of IDs, {@code first..last}.
 *
 * @param first the first ID
 * @param last the last ID, at least first
 */
public record Range(long first, long last) {
    /**
     * Checks that the range is not empty.
     *
     * @param first the first ID
     * @param last the last ID
     *
     * @throws IllegalArgumentException when last is below first
     */
    public Range {
        if (last < first) throw new IllegalArgumentException("range " + first + ".." + last + " is empty");
    }

    /** {@return how many IDs the range holds} */
    public long size() { return last - first + 1; }

    /**
     * Whether id lies in the range.
     *
     * @param id an ID
     * @return true when first &lt;= id &lt;= last
     */
    public boolean contains(long id) { return id >= first && id <= last; }

    @Override public String toString() { return first + "-" + last; }
}
