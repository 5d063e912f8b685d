package io.ticketd.client;

import java.util.OptionalLong;

/**
 * The bounds of a new sequence, for {@link TicketdClient#createSequence(String, SequenceSettings)};
 * the Go SDK's {@code SequenceSettings}. A bound not set is left out of the request and takes the
 * server's default (start 1, max 2^63-1). Immutable; make one with {@link #builder()}.
 */
public final class SequenceSettings {
    private static final SequenceSettings DEFAULTS = builder().build();

    private final OptionalLong start;
    private final OptionalLong max;

    private SequenceSettings(OptionalLong start, OptionalLong max) {
        this.start = start;
        this.max = max;
    }

    /** {@return settings with both bounds the server's defaults} */
    public static SequenceSettings defaults() { return DEFAULTS; }

    /** {@return a builder, with no bound set} */
    public static Builder builder() { return new Builder(); }

    /** {@return the first ID, if set} */
    public OptionalLong start() { return start; }

    /** {@return the largest ID, if set} */
    public OptionalLong max() { return max; }

    /** The request's JSON body: the bounds set, and only those. */
    String json() {
        StringBuilder b = new StringBuilder("{");
        if (start.isPresent()) b.append("\"start\":").append(start.getAsLong());
        if (max.isPresent()) b.append(start.isPresent() ? "," : "").append("\"max\":").append(max.getAsLong());
        return b.append('}').toString();
    }

    @Override
    public String toString() { return "SequenceSettings[start=" + start + ", max=" + max + "]"; }

    /** Bounds of a new sequence; {@link #build()} checks them ({@link InvalidArgumentException}). */
    public static final class Builder {
        private OptionalLong start = OptionalLong.empty();
        private OptionalLong max = OptionalLong.empty();

        private Builder() {}

        /**
         * The first ID. Default: the server's, 1.
         *
         * @param first at least 1
         * @return this builder
         */
        public Builder start(long first) {
            this.start = OptionalLong.of(first);
            return this;
        }

        /**
         * The largest ID. Default: the server's, 2^63-1.
         *
         * @param last at least start
         * @return this builder
         */
        public Builder max(long last) {
            this.max = OptionalLong.of(last);
            return this;
        }

        /**
         * Checks the bounds.
         *
         * @return the settings
         * @throws InvalidArgumentException when a bound is out of range
         */
        public SequenceSettings build() {
            if (start.isPresent() && start.getAsLong() < 1) throw new InvalidArgumentException("start must be at least 1, got " + start.getAsLong());
            if (max.isPresent() && max.getAsLong() < start.orElse(1)) {
                throw new InvalidArgumentException("max " + max.getAsLong() + " is below start " + start.orElse(1));
            }
            return new SequenceSettings(start, max);
        }
    }
}
