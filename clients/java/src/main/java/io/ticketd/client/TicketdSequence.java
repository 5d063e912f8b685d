package io.ticketd.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The IDs of one sequence, from a local cache of ranges refilled in the background; the Go SDK's
 * {@code Sequence}, the same algorithm. {@link TicketdClient#sequence} gives one handle per name and
 * client; share it: it is safe under any number of platform and virtual threads. Tuned by
 * {@link SequenceOptions} (coverage, range sizes; the defaults below).
 *
 * <ul>
 * <li><b>Hot path.</b> The current range is an immutable {first, n} with an atomic {@code used}
 * counter, published through a volatile field. {@link #next()} reads the field, adds 1 to
 * {@code used} and, if the result is below n, returns {@code first+i}: no lock, no allocation.
 * <li><b>Double buffer.</b> Besides the current range the cache holds at most one range fetched
 * ahead; the caller that finds the current range used up takes the lock and swaps it in.
 * <li><b>Low-water mark.</b> When a range becomes current it gets a trigger index: the point where
 * only {@code rate × coverage} (10 s) of its IDs are left, or its first ID if it holds less or the
 * rate is not known yet (so the first ranges are fetched ahead at once). The one caller whose add
 * lands on that index starts the refill on a background thread; one refill at most is in flight.
 * <li><b>Sizing.</b> Each refill samples the rate (it rises at once, falls by half per sample at
 * most); a range holds {@code rate × coverage} IDs within 1,000 .. 10,000,000, and at least twice
 * the last size if a caller had to wait.
 * <li><b>Waiting.</b> Only when the cache is empty; at most the client's call timeout, then
 * {@link UnavailableException}. The background refill goes on retrying until it succeeds or the
 * client is closed, so the handle recovers by itself.
 * <li><b>Order.</b> IDs are unique and strictly increasing in the order the calls take them (per
 * thread, and across threads in the order of the atomic adds); a range not above the last one held
 * is refused. What is left in the cache at close is never handed out (gaps).
 * <li><b>Exhaustion.</b> A refill asking for more than is left halves its request down to what is
 * left; once nothing is, {@link ExhaustedException} for good.
 * </ul>
 */
public final class TicketdSequence {
    /** One range of the cache: first .. first+n-1, cut by adding to used (which may run past n). */
    static final class Block {
        final long first;
        final long n;
        /** The index whose taker starts the next refill; -1: none. Written before the block is published. */
        long trigger;
        /** IDs taken so far (may run past n), added to through USED: a field of the block itself. */
        volatile long used;
        static final VarHandle USED;

        static {
            try {
                USED = MethodHandles.lookup().findVarHandle(Block.class, "used", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        /** Adds want to used, returning the value before. */
        long getAndAdd(long want) {
            return (long) USED.getAndAdd(this, want);
        }

        Block(long first, long n, long trigger) {
            this.first = first;
            this.n = n;
            this.trigger = trigger;
        }

        /**
         * A used-up block's counter grows with every call that finds it used up; past COUNTER_RESET
         * it is set back to n (still used up) so that 2^64 of growth can never wrap it below n.
         */
        void usedUp(long i) {
            if (Long.compareUnsigned(i, COUNTER_RESET) >= 0) used = n;
        }

        /** Cuts up to want IDs as a range, or null if the block is used up. */
        Range take(long want) {
            long i = getAndAdd(want);
            if (Long.compareUnsigned(i, n) >= 0) {
                usedUp(i);
                return null;
            }
            long got = Math.min(want, n - i);
            return new Range(first + i, first + i + got - 1);
        }

        boolean crossesTrigger(Range r) {
            long lo = r.first() - first;
            long hi = r.last() - first;
            return lo <= trigger && trigger <= hi;
        }

        long taken() {
            long u = used;
            return Long.compareUnsigned(u, n) < 0 ? u : n;
        }

        long remaining() { return n - taken(); }
    }

    static final long COUNTER_RESET = 1L << 62;

    /** One background reservation; done is counted down when it ends, after err is set. */
    static final class Refill {
        final CountDownLatch done = new CountDownLatch(1);
        /** The refill's failure (a TicketdFailure), or null. */
        volatile RuntimeException err;
        TicketdException lastErr; // guarded by the sequence's lock
    }

    private final TicketdClient client;
    private final String name;

    /** The range next() cuts from; replaced, never mutated but for its counter. */
    private volatile Block cur = new Block(0, 0, -1);

    private final ReentrantLock lock = new ReentrantLock();
    private Block nxt;
    private Refill inflight;
    private boolean closed;
    private RuntimeException sticky; // ExhaustedException or ClosedException, once seen
    private long highest;
    private long retired;
    private final SequenceOptions options;
    private final Sizer sizer;
    private final FailureStreak streak;
    private boolean ranDry;
    private long lastSize;
    private long refills;
    private long waits;
    private long waitsWhileCached;
    /** The planted bug's second copy of a range (see Plants); null unless the plant is on. */
    private Range plantReplay;

    TicketdSequence(TicketdClient client, String name, SequenceOptions options) {
        this.client = client;
        this.name = name;
        this.options = options;
        this.sizer = new Sizer(options.coverage().toNanos() / 1e9, options.minRange(), options.maxRange());
        this.streak = new FailureStreak("refilling sequence \"" + name + "\"");
    }

    /** {@return the sequence's name} */
    public String name() { return name; }

    /** {@return the options the handle was made with} */
    public SequenceOptions options() { return options; }

    /**
     * The next ID. While the cache holds IDs: one atomic add, no network. Throws
     * {@link UnavailableException} when the cache stayed empty for the call timeout,
     * {@link ExhaustedException}, {@link NotFoundException}, {@link UnauthorizedException},
     * {@link ForbiddenException}, {@link ClosedException}.
     *
     * @return the next ID
     */
    public long next() {
        Block b = cur;
        long i = b.getAndAdd(1);
        if (i >= 0 && i < b.n) {
            if (i == b.trigger) prefetch();
            return b.first + i;
        }
        b.usedUp(i);
        return takeSlow(1).first();
    }

    /**
     * n IDs (1 to 10,000,000) at once as increasing disjoint ranges: one range unless they straddle
     * the end of a cached range. On error no IDs are returned (those cut are skipped: gaps).
     *
     * @param n how many IDs, 1 to 10,000,000
     * @return the IDs, as increasing disjoint ranges
     */
    public List<Range> nextN(int n) {
        if (n < 1 || n > TicketdClient.MAX_RESERVE_COUNT) {
            throw new InvalidArgumentException("nextN: n must be between 1 and " + TicketdClient.MAX_RESERVE_COUNT + ", got " + n);
        }
        long want = n;
        List<Range> out = new ArrayList<>(2);
        Block b = cur;
        Range r = b.take(want);
        if (r != null) {
            if (b.crossesTrigger(r)) prefetch();
            out.add(r);
            want -= r.size();
        }
        while (want > 0) {
            Range s = takeSlow(want);
            int last = out.size() - 1;
            if (last >= 0 && out.get(last).last() + 1 == s.first()) {
                out.set(last, new Range(out.get(last).first(), s.last()));
            } else {
                out.add(s);
            }
            want -= s.size();
        }
        return out;
    }

    /** Cuts up to want IDs once the current range is used up: swaps in the next one or waits for a refill. */
    private Range takeSlow(long want) {
        boolean waited = false;
        long deadline = 0;
        while (true) {
            Refill a;
            lock.lock();
            try {
                Range r = takeLocked(want);
                if (r != null) return r;
                if (sticky != null) throw ForCaller.copy(sticky);
                a = inflight;
                if (a == null && (a = startRefillLocked()) == null) throw new ClosedException("ticketd: client closed");
                if (!waited) {
                    waited = true;
                    waitLocked();
                    deadline = client.deadline();
                }
            } finally {
                lock.unlock();
            }
            boolean done;
            try {
                done = a.done.await(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                if (client.isClosed()) throw new ClosedException("ticketd: client closed");
                throw new UnavailableException("ticketd: interrupted while waiting for a range of \"" + name + "\"", e);
            }
            if (done) {
                RuntimeException err = a.err;
                if (err != null) throw ForCaller.copy(err);
                continue;
            }
            if (client.isClosed()) throw new ClosedException("ticketd: client closed");
            TicketdException last;
            lock.lock();
            try {
                last = a.lastErr;
            } finally {
                lock.unlock();
            }
            throw client.unavailable(last);
        }
    }

    /**
     * Counts a caller about to wait on the network. Reached only with the current range used up and
     * nothing fetched ahead; waitsWhileCached counts waits that found IDs all the same (a bug).
     */
    private void waitLocked() {
        waits++;
        ranDry = true;
        if (cachedLocked() > 0) waitsWhileCached++;
    }

    private Range takeLocked(long want) {
        while (true) {
            Block b = cur;
            Range r = b.take(want);
            if (r != null) {
                if (b.crossesTrigger(r)) prefetchLocked();
                return r;
            }
            if (nxt == null && plantReplay != null) { // the planted bug: the same range once more
                nxt = new Block(plantReplay.first(), plantReplay.size(), -1);
                plantReplay = null;
            }
            if (nxt == null) return null;
            Block nb = nxt;
            nxt = null;
            installLocked(nb);
        }
    }

    /** Makes nb current, with its low-water mark from the observed rate (its first ID if unknown). */
    private void installLocked(Block nb) {
        retired += cur.n;
        nb.trigger = 0;
        long low = sizer.lowWater();
        if (low > 0 && low < nb.n) nb.trigger = nb.n - low;
        cur = nb;
    }

    private void prefetch() {
        lock.lock();
        try {
            prefetchLocked();
        } finally {
            lock.unlock();
        }
    }

    private void prefetchLocked() {
        if (inflight == null && nxt == null && sticky == null) startRefillLocked();
    }

    private Refill startRefillLocked() {
        sizer.observe(retired + cur.taken(), System.nanoTime());
        long size = sizer.size(ranDry, lastSize);
        ranDry = false;
        lastSize = size;
        Refill a = new Refill();
        if (client.startBackground("refill-" + name, () -> runRefill(a, size)) == null) return null;
        inflight = a;
        return a;
    }

    /** Reserves size IDs (fewer when fewer are left), retrying until success, a final answer or close. */
    private void runRefill(Refill a, long size) {
        int[] failures = {0};
        Consumer<TicketdException> onFailure = e -> {
            failures[0]++;
            lock.lock();
            try {
                a.lastErr = e;
            } finally {
                lock.unlock();
            }
            streak.failed(e, true);
        };
        while (true) {
            try {
                Faults.beforeBackgroundCall();
                finishRefill(a, client.reserve(name, size, Long.MAX_VALUE, onFailure), null, failures[0]);
                return;
            } catch (ExhaustedException e) {
                if (size > 1) {
                    size /= 2; // fewer IDs are left than asked for: ask for fewer
                    continue;
                }
                finishRefill(a, null, e, failures[0]);
                return;
            } catch (RuntimeException e) {
                finishRefill(a, null, e instanceof TicketdFailure ? e : failed(e), failures[0]);
                return;
            } catch (Error e) {
                // Unfinished (OutOfMemoryError, StackOverflowError), the refill would stay in flight
                // for good, its waiters time out and no refill would ever start again.
                finishRefill(a, null, failed(e), failures[0]);
                throw e; // reported, and still the thread's to die of
            }
        }
    }

    private TicketdException failed(Throwable e) {
        return new TicketdException("ticketd: refilling \"" + name + "\" failed: " + e, 0, "", "", "", e);
    }

    private void finishRefill(Refill a, Range r, RuntimeException err, int failures) {
        lock.lock();
        try {
            if (closed || client.isClosed()) {
                err = new ClosedException("ticketd: client closed");
            } else if (err == null && r.first() <= highest) {
                err = new TicketdException("ticketd: the server answered range " + r + " of \"" + name + "\", which is not above "
                    + highest + ", an ID this sequence already had; refused", 0, "", "", "", null);
            } else if (err == null) {
                highest = r.last();
                refills++;
                nxt = new Block(r.first(), r.size(), -1);
                if (failures > 0 && Plants.rangeTwiceAfterRetry) plantReplay = r;
            } else if (err instanceof ExhaustedException) {
                sticky = err;
            }
            a.err = err;
            inflight = null;
        } finally {
            lock.unlock();
        }
        a.done.countDown();
        // Logged after the waiters are released: a slow log handler delays no caller.
        if (err == null) {
            streak.succeeded();
        } else {
            streak.failed(err, false);
        }
    }

    /** Drops the cache; every later call throws ClosedException. */
    void closeCache() {
        lock.lock();
        try {
            closed = true;
            sticky = new ClosedException("ticketd: client closed");
            nxt = null;
            cur = new Block(0, 0, -1);
        } finally {
            lock.unlock();
        }
    }

    private long cachedLocked() {
        long n = cur.remaining();
        if (nxt != null) n += nxt.n;
        return n;
    }

    /**
     * A snapshot of the cache's state and counters.
     *
     * @param cached IDs in the cache: what is left of the current range, and the range fetched ahead
     * @param refilling whether a refill is in flight
     * @param refills refills that succeeded
     * @param waits calls that waited for a refill (the cache empty)
     * @param waitsWhileCached waits that found IDs cached all the same: always 0 unless a bug
     * @param rangeSize the size asked of the last refill
     * @param rate the rate IDs are handed out at, per second, as the sizer sees it (0: not known yet)
     */
    public record Stats(long cached, boolean refilling, long refills, long waits, long waitsWhileCached, long rangeSize, double rate) {}

    /** {@return a snapshot of the cache's state and counters} */
    public Stats stats() {
        lock.lock();
        try {
            return new Stats(cachedLocked(), inflight != null, refills, waits, waitsWhileCached, lastSize, sizer.rate);
        } finally {
            lock.unlock();
        }
    }

    /** Estimates the rate IDs are handed out at, and sizes ranges and the low-water mark from it. */
    static final class Sizer {
        static final long MIN_SAMPLE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
        final double coverage;
        final long min;
        final long max;
        double rate; // IDs per second; 0: not known yet
        private boolean started;
        private long at;
        private long ids;

        Sizer(double coverage, long min, long max) {
            this.coverage = coverage;
            this.min = min;
            this.max = max;
        }

        /** ids IDs had been handed out in all at nanos. The rate rises at once, falls by half per sample at most. */
        void observe(long total, long nanos) {
            if (!started) {
                started = true;
                at = nanos;
                ids = total;
                return;
            }
            long dt = nanos - at;
            if (dt < MIN_SAMPLE_NANOS) return;
            double inst = (total - ids) / (dt / 1e9);
            rate = inst >= rate ? inst : Math.max(inst, rate / 2);
            at = nanos;
            ids = total;
        }

        long lowWater() { return clamp(rate * coverage, 0, Long.MAX_VALUE / 2); }

        long size(boolean ranDry, long last) {
            long n = clamp(rate * coverage, min, max);
            if (ranDry && last > 0) n = Math.max(n, Math.min(2 * last, max));
            return n;
        }

        static long clamp(double f, long lo, long hi) {
            if (Double.isNaN(f) || f <= lo) return lo;
            if (f >= hi) return hi;
            return (long) Math.ceil(f);
        }
    }
}
