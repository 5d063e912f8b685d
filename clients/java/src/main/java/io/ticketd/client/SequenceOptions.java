package io.ticketd.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How a {@link TicketdSequence}'s cache sizes its ranges; the Python client's {@code coverage},
 * {@code min_range} and {@code max_range}. Immutable; make one with {@link #builder()}, or take
 * {@link #defaults()}. A range holds {@code rate × coverage} IDs (the rate observed), within
 * {@code minRange .. maxRange}, and the next range is fetched when {@code rate × coverage} IDs are
 * left: the cache rides out an outage of about {@code coverage} at a steady rate.
 */
public final class SequenceOptions {
    static final Duration DEFAULT_COVERAGE = Duration.ofSeconds(10);
    static final long DEFAULT_MIN_RANGE = 1000;
    static final long DEFAULT_MAX_RANGE = TicketdClient.MAX_RESERVE_COUNT;
    private static final SequenceOptions DEFAULTS = builder().build();

    private final Duration coverage;
    private final long minRange;
    private final long maxRange;

    private SequenceOptions(Builder b) {
        this.coverage = b.coverage;
        this.minRange = b.minRange;
        this.maxRange = b.maxRange;
    }

    /** {@return the defaults: coverage 10 s, ranges of 1,000 to 10,000,000 IDs} */
    public static SequenceOptions defaults() { return DEFAULTS; }

    /** {@return a builder, with the defaults until set} */
    public static Builder builder() { return new Builder(); }

    /** {@return the outage the cache should ride out at the observed rate} */
    public Duration coverage() { return coverage; }

    /** {@return the fewest IDs a range is reserved with} */
    public long minRange() { return minRange; }

    /** {@return the most IDs a range is reserved with} */
    public long maxRange() { return maxRange; }

    /** What differs from the earlier options, "" if nothing: for the error of a second, other handle. */
    String differencesFrom(SequenceOptions earlier) {
        List<String> d = new ArrayList<>();
        if (!coverage.equals(earlier.coverage)) d.add("coverage " + coverage + " (the handle's: " + earlier.coverage + ")");
        if (minRange != earlier.minRange) d.add("minRange " + minRange + " (the handle's: " + earlier.minRange + ")");
        if (maxRange != earlier.maxRange) d.add("maxRange " + maxRange + " (the handle's: " + earlier.maxRange + ")");
        return String.join(", ", d);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SequenceOptions && differencesFrom((SequenceOptions) o).isEmpty();
    }

    @Override
    public int hashCode() { return Objects.hash(coverage, minRange, maxRange); }

    @Override
    public String toString() { return "SequenceOptions[coverage=" + coverage + ", minRange=" + minRange + ", maxRange=" + maxRange + "]"; }

    /** Options of a sequence handle; {@link #build()} checks them ({@link InvalidArgumentException}). */
    public static final class Builder {
        private Duration coverage = DEFAULT_COVERAGE;
        private long minRange = DEFAULT_MIN_RANGE;
        private long maxRange = DEFAULT_MAX_RANGE;

        private Builder() {}

        /**
         * The outage the cache should ride out at the observed rate. Default 10 s.
         *
         * @param d a positive duration
         * @return this builder
         */
        public Builder coverage(Duration d) {
            this.coverage = d;
            return this;
        }

        /**
         * The fewest IDs a range is reserved with. Default 1,000.
         *
         * @param n 1 to maxRange
         * @return this builder
         */
        public Builder minRange(long n) {
            this.minRange = n;
            return this;
        }

        /**
         * The most IDs a range is reserved with. Default 10,000,000.
         *
         * @param n minRange to 10,000,000
         * @return this builder
         */
        public Builder maxRange(long n) {
            this.maxRange = n;
            return this;
        }

        /**
         * Checks the options.
         *
         * @return the options
         * @throws InvalidArgumentException naming the option out of bounds
         */
        public SequenceOptions build() {
            Durations.requirePositive("coverage", coverage);
            if (minRange < 1 || minRange > maxRange || maxRange > TicketdClient.MAX_RESERVE_COUNT) {
                throw new InvalidArgumentException("want 1 <= minRange <= maxRange <= " + TicketdClient.MAX_RESERVE_COUNT
                    + ", got minRange " + minRange + ", maxRange " + maxRange);
            }
            return new SequenceOptions(this);
        }
    }
}
