package io.ticketd.client;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Snowflake IDs made by the servers ({@code POST /v1/namespaces/{name}/ids}), buffered; the Go SDK's
 * {@code SnowflakeRemote}. The same double buffer as a sequence's: the batch being handed out, cut
 * with one atomic add, and at most one batch fetched ahead when fewer than the low-water mark are
 * left. Fetches go to any node (a random first one, then the node after the one that served); a
 * node that answered with {@code Retry-After} (503 clock-behind among others) is not asked again
 * until then, one that failed at the transport rests for the longest backoff. Every answer is
 * checked before use: exactly the count asked, strictly increasing, this namespace, and above every
 * ID already received under its worker id; a bad one is refused and the next node asked.
 * IDs of one batch increase; across batches (nodes) only uniqueness is promised.
 *
 * <p>A batch is handed out for {@link SnowflakeOptions#maxAge()} at most (10 minutes by default,
 * as Hazelcast's FlakeIdGenerator), counted on the monotonic clock from before its request: then
 * what is left of it, and of a batch fetched ahead, is dropped, and the next call fetches a fresh
 * batch. A Snowflake ID's timestamp is when a node made it; a batch kept for hours would hand out
 * hours-old timestamps, against what a time-sortable ID promises.
 *
 * <p>{@link TicketdClient#snowflake} gives one handle per namespace and client, shared by every
 * caller; tuned by {@link SnowflakeOptions}. It is not {@link AutoCloseable}: the client owns it and
 * closes it; {@link #close()} is there to let go of a namespace for good, for every holder.
 */
public final class SnowflakeRemote {
    /** A batch: ids[0..n) cut by the block's counter, handed out until expiresAt. */
    static final class Batch {
        final TicketdSequence.Block block;
        final long[] ids;
        /** System.nanoTime() past which the batch is too old to hand out (its request + maxAge). */
        final long expiresAt;

        Batch(long[] ids, long trigger, long expiresAt) {
            this.block = new TicketdSequence.Block(0, ids.length, trigger);
            this.ids = ids;
            this.expiresAt = expiresAt;
        }

        /** No IDs: the state before the first fetch and after close. */
        static Batch empty() { return new Batch(new long[0], -1, System.nanoTime()); }

        /** Whether it may still be handed out at now (System.nanoTime(); compared by difference, which wraps safely). */
        boolean fresh(long now) { return now - expiresAt < 0; }
    }

    static final class Fetch {
        final CountDownLatch done = new CountDownLatch(1);
        /** The fetch's failure (a TicketdFailure), or null. */
        volatile RuntimeException err;
        TicketdException lastErr; // guarded by lock
        Thread thread;
    }

    private final TicketdClient client;
    private final String ns;
    private final String path;
    private final SnowflakeOptions options;
    private final int batch;
    private final int lowWater;
    private final long maxAgeNanos;
    private final FailureStreak streak;

    private volatile Batch cur = Batch.empty();

    private final java.util.concurrent.locks.ReentrantLock lock = new java.util.concurrent.locks.ReentrantLock();
    private Batch nxt;
    private Fetch inflight;
    private boolean closed;
    private int rr;
    private final long[] skipUntil; // per endpoint, System.nanoTime(); 0: not skipped
    private final Map<Long, Long> highest = new HashMap<>(); // per worker id
    private long fetches;
    private long failures;
    private long refused;
    private long waits;
    private long expired;

    SnowflakeRemote(TicketdClient client, String ns, SnowflakeOptions options) {
        this.client = client;
        this.ns = ns;
        this.path = "/v1/namespaces/" + TicketdClient.pathSegment(ns) + "/ids";
        this.options = options;
        this.batch = options.batch();
        this.lowWater = options.lowWater();
        this.maxAgeNanos = options.maxAge().toNanos();
        this.streak = new FailureStreak("fetching Snowflake IDs of \"" + ns + "\"");
        this.skipUntil = new long[client.endpoints.size()];
        this.rr = ThreadLocalRandom.current().nextInt(client.endpoints.size()); // spread many processes' first fetches
    }

    /** {@return the namespace's name} */
    public String namespace() { return ns; }

    /** {@return the options the handle was made with} */
    public SnowflakeOptions options() { return options; }

    /**
     * One ID: a clock read and an atomic add while IDs are buffered (and their batch is younger
     * than maxAge); else waits up to the call timeout.
     *
     * @return the next ID
     */
    public long next() {
        Batch b = cur;
        if (b.fresh(System.nanoTime())) {
            long i = b.block.getAndAdd(1);
            if (i >= 0 && i < b.block.n) {
                if (i == b.block.trigger) prefetch();
                return b.ids[(int) i];
            }
            b.block.usedUp(i);
        }
        return takeSlow(1, new long[1], 0)[0];
    }

    /**
     * n IDs at once, increasing within each batch they come from.
     *
     * @param n how many IDs, 1 to 10,000
     * @return the IDs
     */
    public long[] nextN(int n) {
        if (n < 1 || n > TicketdClient.MAX_SNOWFLAKE_IDS) {
            throw new InvalidArgumentException("nextN: n must be between 1 and " + TicketdClient.MAX_SNOWFLAKE_IDS + ", got " + n);
        }
        long[] out = new long[n];
        Batch b = cur;
        Range r = b.fresh(System.nanoTime()) ? b.block.take(n) : null;
        int got = 0;
        if (r != null) {
            if (b.block.crossesTrigger(r)) prefetch();
            got = (int) r.size();
            System.arraycopy(b.ids, (int) r.first(), out, 0, got);
            if (got == n) return out;
        }
        return takeSlow(n - got, out, got);
    }

    private long[] takeSlow(long want, long[] out, int filled) {
        boolean waited = false;
        long deadline = 0;
        while (true) {
            Fetch f;
            lock.lock();
            try {
                while (want > 0) {
                    int got = takeLocked(want, out, filled);
                    if (got == 0) break;
                    filled += got;
                    want -= got;
                }
                if (want == 0) return out;
                if (closed) throw new ClosedException("ticketd: client closed");
                f = inflight;
                if (f == null && (f = startFetchLocked(want)) == null) throw new ClosedException("ticketd: client closed");
                if (!waited) {
                    waited = true;
                    waits++;
                    deadline = client.deadline();
                }
            } finally {
                lock.unlock();
            }
            boolean done;
            try {
                done = f.done.await(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                if (client.isClosed()) throw new ClosedException("ticketd: client closed");
                throw new UnavailableException("ticketd: interrupted while waiting for Snowflake IDs of \"" + ns + "\"", e);
            }
            if (done) {
                RuntimeException err = f.err;
                if (err != null) throw ForCaller.copy(err);
                continue;
            }
            if (client.isClosed()) throw new ClosedException("ticketd: client closed");
            TicketdException last;
            lock.lock();
            try {
                last = f.lastErr;
            } finally {
                lock.unlock();
            }
            if (last instanceof ClockBehindException) {
                ClockBehindException cb = (ClockBehindException) last;
                throw new ClockBehindException("ticketd: unavailable: no node could serve Snowflake IDs of \"" + ns
                    + "\" within the call timeout; last failure: " + cb.getMessage(), cb.status(), cb.problemType(),
                    cb.detail(), cb.endpoint(), cb, cb.behindMillis());
            }
            throw client.unavailable(last);
        }
    }

    /** Copies up to want IDs into out at filled, moving to the batch fetched ahead when needed; 0 if none. */
    private int takeLocked(long want, long[] out, int filled) {
        dropExpiredLocked(System.nanoTime());
        while (true) {
            Batch b = cur;
            Range r = b.block.take(want);
            if (r != null) {
                if (b.block.crossesTrigger(r)) prefetchLocked();
                System.arraycopy(b.ids, (int) r.first(), out, filled, (int) r.size());
                return (int) r.size();
            }
            if (nxt == null) return 0;
            Batch nb = nxt;
            nxt = null;
            nb.block.trigger = lowWater > 0 ? Math.max(nb.block.n - lowWater, 0) : -1;
            cur = nb;
        }
    }

    /**
     * Drops the batches too old to hand out, current and fetched ahead: an ID's timestamp is when a
     * node made it, and a time-sortable ID handed out long after would break what it promises. The
     * next take then fetches a fresh batch (and waits for it).
     */
    private void dropExpiredLocked(long now) {
        Batch b = cur;
        if (!b.fresh(now) && b.block.remaining() > 0) {
            expired += b.block.remaining();
            cur = Batch.empty();
        }
        if (nxt != null && !nxt.fresh(now)) {
            expired += nxt.block.n;
            nxt = null;
        }
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
        if (inflight == null && nxt == null && !closed) startFetchLocked(0);
    }

    private Fetch startFetchLocked(long want) {
        int count = (int) Math.max(batch, Math.min(want, TicketdClient.MAX_SNOWFLAKE_IDS));
        Fetch f = new Fetch();
        if (closed) return null;
        Thread t = client.startBackground("snowflake-" + ns, () -> runFetch(f, count));
        if (t == null) return null;
        f.thread = t;
        inflight = f;
        return f;
    }

    private void runFetch(Fetch f, int count) {
        Consumer<TicketdException> onFailure = e -> {
            lock.lock();
            try {
                f.lastErr = e;
                failures++;
            } finally {
                lock.unlock();
            }
            streak.failed(e, true);
        };
        RuntimeException err = null;
        Error fatal = null;
        Batch b = null;
        try {
            Faults.beforeBackgroundCall();
            b = fetch(count, onFailure);
        } catch (RuntimeException e) {
            err = e instanceof TicketdFailure ? e : failed(e);
        } catch (Error e) {
            // Unfinished (OutOfMemoryError, StackOverflowError), the fetch would stay in flight for
            // good, its waiters time out and no fetch would ever start again.
            err = failed(e);
            fatal = e;
        }
        lock.lock();
        try {
            if (closed || client.isClosed()) {
                err = new ClosedException("ticketd: client closed");
            } else if (err == null) {
                nxt = b;
            }
            f.err = err;
            inflight = null;
        } finally {
            lock.unlock();
        }
        f.done.countDown();
        // Logged after the waiters are released: a slow log handler delays no caller.
        if (err == null) {
            streak.succeeded();
        } else {
            streak.failed(err, false);
        }
        if (fatal != null) throw fatal; // reported, and still the thread's to die of
    }

    private TicketdException failed(Throwable e) {
        return new TicketdException("ticketd: fetching Snowflake IDs of \"" + ns + "\" failed: " + e, 0, "", "", "", e);
    }

    /** Goes round the nodes until one gives a valid batch, a final error, or the client closes. */
    private Batch fetch(int count, Consumer<TicketdException> onFailure) {
        List<TicketdClient.Endpoint> eps = client.endpoints;
        String body = "{\"count\":" + count + "}";
        for (int round = 1; ; round++) {
            int start;
            lock.lock();
            try {
                start = rr;
            } finally {
                lock.unlock();
            }
            for (int k = 0; k < eps.size(); k++) {
                int idx = (start + k) % eps.size();
                if (skipped(idx) > 0) continue;
                if (client.isClosed() || isClosed()) throw new ClosedException("ticketd: client closed");
                TicketdClient.Answer a;
                // The batch's age counts from before its request: its IDs can be no older.
                long sentAt = System.nanoTime();
                try {
                    a = client.attempt(eps.get(idx), "POST", path, body, client.attemptNanos);
                } catch (TicketdClient.TransportFailure tf) {
                    if (eps.size() > 1 && !tf.noToken) skip(idx, client.maxBackoffNanos);
                    onFailure.accept(tf.error);
                    continue;
                }
                if (a.status() / 100 == 2) {
                    try {
                        return accept(idx, a, count, sentAt + maxAgeNanos);
                    } catch (TicketdException e) {
                        onFailure.accept(e);
                        continue;
                    }
                }
                RuntimeException typed = Problems.typed(a);
                // A node without the route (an older version) is skipped as a failed one is.
                boolean routeUnknown = a.status() == 405 || (typed instanceof TicketdException
                    && "urn:ticketd:problem:route-not-found".equals(((TicketdException) typed).problemType()));
                if (!(typed instanceof TicketdException) || (!TicketdClient.retryable(a.status()) && !routeUnknown)) throw typed;
                if (a.retryAfterNanos() > 0) skip(idx, Math.min(a.retryAfterNanos(), TicketdClient.MAX_RETRY_AFTER_NANOS));
                onFailure.accept((TicketdException) typed);
            }
            long wait = Math.max(client.backoffNanos(round), soonestAllowed());
            if (client.sleepUnlessClosed(wait)) throw new ClosedException("ticketd: client closed");
        }
    }

    private void skip(int idx, long nanos) {
        lock.lock();
        try {
            skipUntil[idx] = System.nanoTime() + nanos;
        } finally {
            lock.unlock();
        }
    }

    private long skipped(int idx) {
        lock.lock();
        try {
            return skipUntil[idx] == 0 ? 0 : Math.max(skipUntil[idx] - System.nanoTime(), 0);
        } finally {
            lock.unlock();
        }
    }

    /** How long until some node may be asked again (0: one may now). */
    private long soonestAllowed() {
        lock.lock();
        try {
            long now = System.nanoTime();
            long soonest = Long.MAX_VALUE;
            for (long t : skipUntil) {
                long d = t == 0 ? 0 : t - now;
                if (d <= 0) return 0;
                soonest = Math.min(soonest, d);
            }
            return soonest == Long.MAX_VALUE ? 0 : soonest;
        } finally {
            lock.unlock();
        }
    }

    /** Checks a node's answer as the Go SDK's accept(): namespace, count, increasing, above the worker's last. */
    private Batch accept(int idx, TicketdClient.Answer a, int count, long expiresAt) {
        String base = a.endpoint().base();
        long[] ids;
        long worker;
        String answeredNs;
        try {
            Map<String, Object> m = Json.object(Json.parse(a.body()), "the answer");
            answeredNs = Json.getString(m, "namespace");
            worker = Json.getLong(m, "worker_id");
            List<?> raw = Json.getArray(m, "ids");
            ids = new long[raw.size()];
            for (int k = 0; k < ids.length; k++) {
                if (!(raw.get(k) instanceof Long)) throw new IllegalArgumentException("ids[" + k + "] is not an int64");
                ids[k] = (Long) raw.get(k);
            }
        } catch (IllegalArgumentException e) {
            throw refuse(base, "the answer is not the expected JSON: " + e.getMessage());
        }
        if (!answeredNs.equals(ns)) throw refuse(base, "the answer is for namespace \"" + answeredNs + "\"");
        if (ids.length != count) throw refuse(base, ids.length + " IDs for " + count + " asked");
        for (int k = 0; k < ids.length; k++) {
            if (ids[k] < 0 || (k > 0 && ids[k] <= ids[k - 1])) throw refuse(base, "ID " + ids[k] + " at " + k + " does not increase");
        }
        lock.lock();
        try {
            Long h = highest.get(worker);
            if (worker >= 0 && h != null && ids[0] <= h) {
                refused++;
                throw new TicketdException("ticketd: " + base + " answered Snowflake IDs of \"" + ns + "\" from " + ids[0]
                    + " under worker id " + worker + ", not above " + h + ", an ID already received under it; refused",
                    a.status(), "", "", base, null);
            }
            if (worker >= 0) highest.put(worker, ids[ids.length - 1]);
            fetches++;
            rr = (idx + 1) % client.endpoints.size();
        } finally {
            lock.unlock();
        }
        return new Batch(ids, -1, expiresAt);
    }

    private TicketdException refuse(String base, String why) {
        lock.lock();
        try {
            refused++;
        } finally {
            lock.unlock();
        }
        return new TicketdException("ticketd: " + base + " answered Snowflake IDs of \"" + ns + "\" that are refused: " + why,
            0, "", "", base, null);
    }

    private boolean isClosed() {
        lock.lock();
        try {
            return closed;
        } finally {
            lock.unlock();
        }
    }

    /** Drops the buffer; later calls throw ClosedException. */
    void closeCache() {
        lock.lock();
        try {
            closed = true;
            nxt = null;
            cur = Batch.empty();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lets go of this namespace: drops the buffer and waits for the fetch in flight (the client's
     * close does this for every handle). The handle is shared, so every holder's next call throws
     * {@link ClosedException}; the client's next {@code snowflake(ns)} makes a new handle.
     */
    public void close() {
        Fetch f;
        lock.lock();
        try {
            f = inflight;
        } finally {
            lock.unlock();
        }
        closeCache();
        client.deregister(this);
        if (f != null && f.thread != null) {
            f.thread.interrupt();
            boolean interrupted = false;
            while (true) {
                try {
                    f.done.await();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    /**
     * A snapshot of the buffer and its counters.
     *
     * @param cached IDs buffered: what is left of the current batch, and the batch fetched ahead
     * @param fetching whether a fetch is in flight
     * @param fetches batches received
     * @param failures failed attempts of fetches (retried)
     * @param refused answers refused (wrong namespace or count, IDs not increasing or not above
     *     those already received under their worker id)
     * @param waits calls that waited for a fetch (the buffer empty)
     * @param expired IDs dropped unused because their batch outlived {@link SnowflakeOptions#maxAge()}
     * @param batch the batch size
     */
    public record Stats(long cached, boolean fetching, long fetches, long failures, long refused, long waits, long expired, int batch) {}

    /** {@return a snapshot of the buffer and its counters} */
    public Stats stats() {
        lock.lock();
        try {
            long cached = cur.block.remaining() + (nxt == null ? 0 : nxt.block.n);
            return new Stats(cached, inflight != null, fetches, failures, refused, waits, expired, batch);
        } finally {
            lock.unlock();
        }
    }
}
