package io.ticketd.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How a {@link SnowflakeRemote} buffers IDs: the Python client's {@code batch} and
 * {@code low_water}, and how long a fetched batch may be handed out ({@code maxAge}). Immutable;
 * make one with {@link #builder()}, or take {@link #defaults()}.
 */
public final class SnowflakeOptions {
    static final int DEFAULT_BATCH = 256;
    /** Hazelcast's FlakeIdGenerator prefetch validity, 10 minutes. */
    static final Duration DEFAULT_MAX_AGE = Duration.ofMinutes(10);
    /** Below this a batch could expire before it arrives, and every fetch be dropped. */
    static final Duration MIN_MAX_AGE = Duration.ofMillis(100);
    private static final SnowflakeOptions DEFAULTS = builder().build();

    private final int batch;
    private final int lowWater;
    private final Duration maxAge;

    private SnowflakeOptions(int batch, int lowWater, Duration maxAge) {
        this.batch = batch;
        this.lowWater = lowWater;
        this.maxAge = maxAge;
    }

    /** {@return the defaults: batches of 256, the next fetched when 128 are left, each handed out for 10 minutes at most} */
    public static SnowflakeOptions defaults() { return DEFAULTS; }

    /** {@return a builder, with the defaults until set} */
    public static Builder builder() { return new Builder(); }

    /** {@return how many IDs are asked of a node at once} */
    public int batch() { return batch; }

    /** {@return the low-water mark: the next batch is fetched when fewer than this many are left; 0: only when empty} */
    public int lowWater() { return lowWater; }

    /**
     * {@return how long after its request a batch may be handed out} Then what is left of it is
     * dropped and a fresh batch fetched, so that an ID's timestamp is never older than this when
     * handed out.
     */
    public Duration maxAge() { return maxAge; }

    /** What differs from the earlier options, "" if nothing: for the error of a second, other handle. */
    String differencesFrom(SnowflakeOptions earlier) {
        List<String> d = new ArrayList<>();
        if (batch != earlier.batch) d.add("batch " + batch + " (the handle's: " + earlier.batch + ")");
        if (lowWater != earlier.lowWater) d.add("lowWater " + lowWater + " (the handle's: " + earlier.lowWater + ")");
        if (!maxAge.equals(earlier.maxAge)) d.add("maxAge " + maxAge + " (the handle's: " + earlier.maxAge + ")");
        return String.join(", ", d);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SnowflakeOptions && differencesFrom((SnowflakeOptions) o).isEmpty();
    }

    @Override
    public int hashCode() { return Objects.hash(batch, lowWater, maxAge); }

    @Override
    public String toString() { return "SnowflakeOptions[batch=" + batch + ", lowWater=" + lowWater + ", maxAge=" + maxAge + "]"; }

    /** Options of a Snowflake handle; {@link #build()} checks them ({@link InvalidArgumentException}). */
    public static final class Builder {
        private int batch = DEFAULT_BATCH;
        /** Null until set: then half the batch, whatever the batch. */
        private Integer lowWater;
        private Duration maxAge = DEFAULT_MAX_AGE;

        private Builder() {}

        /**
         * How many IDs are asked of a node at once. Default 256.
         *
         * @param n 1 to 10,000
         * @return this builder
         */
        public Builder batch(int n) {
            this.batch = n;
            return this;
        }

        /**
         * Fetch the next batch when fewer than n are left. Default: half the batch.
         *
         * @param n 0 to the batch; 0: only when empty
         * @return this builder
         */
        public Builder lowWater(int n) {
            this.lowWater = n;
            return this;
        }

        /**
         * How long after its request a batch may be handed out (measured on the monotonic clock,
         * System.nanoTime); then what is left is dropped and a fresh batch fetched. At least
         * 100 ms, and best well above a fetch's round trip. Default 10 minutes.
         *
         * @param d 100 ms to 365 days
         * @return this builder
         */
        public Builder maxAge(Duration d) {
            this.maxAge = d;
            return this;
        }

        /**
         * Checks the options.
         *
         * @return the options
         * @throws InvalidArgumentException naming the option out of bounds
         */
        public SnowflakeOptions build() {
            if (batch < 1 || batch > TicketdClient.MAX_SNOWFLAKE_IDS) {
                throw new InvalidArgumentException("batch must be between 1 and " + TicketdClient.MAX_SNOWFLAKE_IDS + ", got " + batch);
            }
            int low = lowWater == null ? batch / 2 : lowWater;
            if (low < 0 || low > batch) {
                throw new InvalidArgumentException("lowWater must be between 0 and the batch (" + batch + "), got " + low);
            }
            Durations.requirePositive("maxAge", maxAge);
            if (maxAge.compareTo(MIN_MAX_AGE) < 0) {
                throw new InvalidArgumentException("maxAge must be at least " + MIN_MAX_AGE.toMillis() + " ms (a batch must outlive its fetch), got " + maxAge);
            }
            return new SnowflakeOptions(batch, low, maxAge);
        }
    }
}
