package io.ticketd.client;

import java.lang.System.Logger.Level;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Logs the background failures of one handle (its refills or fetches) once per streak: a WARNING at
 * the first failure after a success (or at the start), an INFO when one succeeds again, and each
 * failure in between at DEBUG only. A refill retries every few hundred milliseconds until it
 * succeeds; a line per retry would bury the log, while none at all left a refill failing for hours
 * (a 401 after a token rotation) invisible until {@code next()} ran dry. ClosedException is no
 * failure: it is how a refill ends when the client closes.
 *
 * <p>The logger is {@code System.getLogger("io.ticketd.client")}: java.util.logging unless the
 * application installs another {@code System.LoggerFinder} (SLF4J and Log4j have bridges). Logging
 * happens outside every lock of the library.
 */
final class FailureStreak {
    static final System.Logger LOG = System.getLogger("io.ticketd.client");

    private final String what;
    private final ReentrantLock lock = new ReentrantLock();
    private boolean failing;
    private long failures;
    private long since;

    /** @param what the work that fails, for the log: {@code refilling sequence "orders"} */
    FailureStreak(String what) {
        this.what = what;
    }

    /** One failure of the work; retrying: the work goes on trying (else it ended with e). */
    void failed(Throwable e, boolean retrying) {
        if (e instanceof ClosedException) return;
        boolean first;
        long n;
        lock.lock();
        try {
            first = !failing;
            if (first) {
                failing = true;
                failures = 0;
                since = System.nanoTime();
            }
            n = ++failures;
        } finally {
            lock.unlock();
        }
        if (first) {
            LOG.log(Level.WARNING, "ticketd: " + what + " in the background failed" + (retrying ? ", retrying until it succeeds: " : ": ")
                + e.getMessage() + " (further failures are logged at DEBUG until one succeeds)", e);
        } else if (LOG.isLoggable(Level.DEBUG)) {
            LOG.log(Level.DEBUG, "ticketd: " + what + " in the background failed again (" + n + " in a row): " + e.getMessage());
        }
    }

    /** The work succeeded: ends a streak of failures, if there was one. */
    void succeeded() {
        long n;
        long nanos;
        lock.lock();
        try {
            if (!failing) return;
            failing = false;
            n = failures;
            nanos = System.nanoTime() - since;
        } finally {
            lock.unlock();
        }
        LOG.log(Level.INFO, "ticketd: " + what + " in the background succeeds again, after " + n
            + (n == 1 ? " failure" : " failures") + " over " + TimeUnit.NANOSECONDS.toMillis(nanos) + " ms");
    }

    /** Whether the last outcome was a failure (for tests). */
    boolean failing() {
        lock.lock();
        try {
            return failing;
        } finally {
            lock.unlock();
        }
    }
}
