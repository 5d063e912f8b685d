package io.ticketd.client;

import java.time.Duration;

/** The one check of every Duration option: positive, and far enough below overflow. */
final class Durations {
    /** The longest option: far below Long.MAX_VALUE ns, so that System.nanoTime() + it cannot overflow. */
    static final Duration MAX = Duration.ofDays(365);

    private Durations() {}

    static void requirePositive(String what, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new InvalidArgumentException(what + " must be positive, got " + d);
        }
        if (d.compareTo(MAX) > 0) {
            throw new InvalidArgumentException(what + " must be at most " + MAX.toDays() + " days, got " + d);
        }
    }
}
