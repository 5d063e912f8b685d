package io.ticketd.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How a {@link SnowflakeRemote} buffers IDs; the Python client's {@code batch} and
 * {@code low_water}. Immutable; make one with {@link #builder()}, or take {@link #defaults()}.
 */
public final class SnowflakeOptions {
    static final int DEFAULT_BATCH = 256;
    private static final SnowflakeOptions DEFAULTS = builder().build();

    private final int batch;
    private final int lowWater;

    private SnowflakeOptions(int batch, int lowWater) {
        this.batch = batch;
        this.lowWater = lowWater;
    }

    /** Batches of 256, the next fetched when 128 are left. */
    public static SnowflakeOptions defaults() { return DEFAULTS; }

    public static Builder builder() { return new Builder(); }

    /** IDs asked of a node at once. */
    public int batch() { return batch; }

    /** The next batch is fetched when fewer than this many are left; 0: only when empty. */
    public int lowWater() { return lowWater; }

    /** What differs from the earlier options, "" if nothing: for the error of a second, other handle. */
    String differencesFrom(SnowflakeOptions earlier) {
        List<String> d = new ArrayList<>();
        if (batch != earlier.batch) d.add("batch " + batch + " (the handle's: " + earlier.batch + ")");
        if (lowWater != earlier.lowWater) d.add("lowWater " + lowWater + " (the handle's: " + earlier.lowWater + ")");
        return String.join(", ", d);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SnowflakeOptions && differencesFrom((SnowflakeOptions) o).isEmpty();
    }

    @Override
    public int hashCode() { return Objects.hash(batch, lowWater); }

    @Override
    public String toString() { return "SnowflakeOptions[batch=" + batch + ", lowWater=" + lowWater + "]"; }

    /** Options of a Snowflake handle; {@link #build()} checks them ({@link InvalidArgumentException}). */
    public static final class Builder {
        private int batch = DEFAULT_BATCH;
        /** Null until set: then half the batch, whatever the batch. */
        private Integer lowWater;

        private Builder() {}

        /** IDs asked of a node at once, 1 to 10,000. Default 256. */
        public Builder batch(int n) {
            this.batch = n;
            return this;
        }

        /** Fetch the next batch when fewer than n are left, 0 to the batch; 0: only when empty. Default half the batch. */
        public Builder lowWater(int n) {
            this.lowWater = n;
            return this;
        }

        public SnowflakeOptions build() {
            if (batch < 1 || batch > TicketdClient.MAX_SNOWFLAKE_IDS) {
                throw new InvalidArgumentException("batch must be between 1 and " + TicketdClient.MAX_SNOWFLAKE_IDS + ", got " + batch);
            }
            int low = lowWater == null ? batch / 2 : lowWater;
            if (low < 0 || low > batch) {
                throw new InvalidArgumentException("lowWater must be between 0 and the batch (" + batch + "), got " + low);
            }
            return new SnowflakeOptions(batch, low);
        }
    }
}
