package io.ticketd.client;

/**
 * Faults injected by the tests, as {@link Plants} holds the planted bugs: package-private, so
 * nothing in the public API reaches them, and off unless a test sets them.
 */
final class Faults {
    /**
     * Run on a background refill's or fetch's thread before it asks the cluster. A test makes it
     * throw an {@link Error} to show that the handle still reports the failure and refills again.
     */
    static volatile Runnable beforeBackgroundCall;

    private Faults() {}

    static void beforeBackgroundCall() {
        Runnable r = beforeBackgroundCall;
        if (r != null) r.run();
    }
}
