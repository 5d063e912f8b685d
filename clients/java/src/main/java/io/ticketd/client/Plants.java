package io.ticketd.client;

/**
 * Planted bugs, for the conformance harness to prove it catches them. Package-private: only the
 * conformance driver and the tests (test sources in this package) can switch one on; nothing in the
 * public API reaches them. Off unless a test sets them.
 */
final class Plants {
    /**
     * range-twice-after-retry: a range whose reservation was retried (at least one failed attempt
     * before the answer) is cached twice, so its IDs are handed out twice.
     */
    static volatile boolean rangeTwiceAfterRetry;

    private Plants() {}
}
