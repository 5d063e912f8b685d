package io.ticketd.client;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;

/**
 * A client of a ticketd cluster: uncached reservations ({@link #reserve}), cached sequences
 * ({@link #sequence}) and server-made Snowflake IDs ({@link #snowflake}). Make one per process with
 * {@link #builder()}, share it between threads (platform or virtual), and close it when done:
 * {@link #close()} stops every background refill and waits for it.
 *
 * <p>A call goes to the endpoint that answered last, then to the others in turn; a follower that
 * names the leader ({@code X-Ticketd-Leader}) sends the next calls there, if that address is one of
 * the endpoints (the client only ever sends where it was told). When a whole round fails it waits —
 * exponential backoff with full jitter, the k-th wait uniform in {@code [0, min(max, min·2^(k-1))]},
 * never less than a {@code Retry-After} asked for (capped at 30 s) — and goes round again until the
 * call timeout, then throws {@link UnavailableException} with the last failure as its cause.
 * Transport errors, attempt timeouts, 429, 500, 502, 503, 504 are retried; every other answer is
 * final and typed (see {@link TicketdFailure}).
 *
 * <p>Nothing here holds a monitor ({@code synchronized}) across blocking I/O: locks are
 * {@link ReentrantLock}s, waits are latches and futures, so virtual threads are never pinned.
 */
public final class TicketdClient implements AutoCloseable {
    /** The library's version, as the conformance driver reports it. */
    public static final String VERSION = "0.1.0";

    static final String LEADER_HEADER = "X-Ticketd-Leader";
    static final long MAX_RESERVE_COUNT = 10_000_000L;
    static final int MAX_SNOWFLAKE_IDS = 10_000;
    static final long MAX_RETRY_AFTER_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

    record Endpoint(String base, String host) {}

    /** One HTTP answer of any status. */
    record Answer(Endpoint endpoint, int status, String body, String leader, long retryAfterNanos) {}

    final List<Endpoint> endpoints;
    /** Dropped by close(), so that JDK 17's HttpClient (which has no close) can end its selector thread. */
    private volatile HttpClient http;
    private final ExecutorService httpExecutor;
    /** The executor's threads: close() joins them, as awaitTermination returns before they have ended. */
    private final Set<Thread> httpThreads = ConcurrentHashMap.newKeySet();
    private final AtomicInteger httpThreadSeq = new AtomicInteger();
    private final BearerToken token;
    final long attemptNanos;
    final long callNanos;
    final long minBackoffNanos;
    final long maxBackoffNanos;

    /** Index of the endpoint that answered last (or the leader it named). */
    private final AtomicInteger preferred = new AtomicInteger();

    private final ReentrantLock lock = new ReentrantLock();
    private final CountDownLatch closedLatch = new CountDownLatch(1);
    private volatile boolean closed;
    private final Set<Thread> background = new HashSet<>();
    private final Handles<SequenceOptions, TicketdSequence> sequences =
        new Handles<>("sequence", TicketdSequence::options, SequenceOptions::differencesFrom);
    private final Handles<SnowflakeOptions, SnowflakeRemote> remotes =
        new Handles<>("Snowflake namespace", SnowflakeRemote::options, SnowflakeOptions::differencesFrom);
    private final AtomicInteger threadSeq = new AtomicInteger();

    private TicketdClient(Builder b, List<Endpoint> eps, SSLContext ssl) {
        this.endpoints = List.copyOf(eps);
        this.token = b.token;
        this.attemptNanos = b.attemptTimeout.toNanos();
        this.callNanos = b.callTimeout.toNanos();
        this.minBackoffNanos = b.minBackoff.toNanos();
        this.maxBackoffNanos = b.maxBackoff.toNanos();
        // Our own executor, so that the HttpClient's worker threads are named ticketd-http-* and
        // stopped by close() (JDK 17's HttpClient has no close of its own).
        this.httpExecutor = Executors.newCachedThreadPool(this::newHttpThread);
        HttpClient.Builder hb = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(b.attemptTimeout)
            .followRedirects(HttpClient.Redirect.NEVER)
            .executor(httpExecutor);
        if (ssl != null) hb.sslContext(ssl);
        this.http = hb.build();
    }

    /** The HTTP executor's thread factory: names the thread and keeps it for close() to join. */
    Thread newHttpThread(Runnable r) {
        Thread t = new Thread(r, "ticketd-http-" + httpThreadSeq.incrementAndGet());
        t.setDaemon(true);
        // The cached pool ends idle threads after 60 s: forget the ended ones, or a long-lived
        // client keeps every thread it ever had. A thread made but not started yet (NEW) is kept.
        httpThreads.removeIf(old -> old.getState() == Thread.State.TERMINATED);
        httpThreads.add(t);
        return t;
    }

    /** How many HTTP threads close() would join (for tests). */
    int httpThreadsTracked() { return httpThreads.size(); }

    /** How many sequence handles the client keeps (for tests). */
    int sequenceHandles() {
        lock.lock();
        try {
            return sequences.size();
        } finally {
            lock.unlock();
        }
    }

    /** How many Snowflake handles close() would close (for tests). */
    int remoteHandles() {
        lock.lock();
        try {
            return remotes.size();
        } finally {
            lock.unlock();
        }
    }

    /** {@return a builder whose endpoints, token and CA default to TICKETD_ADDR, TICKETD_TOKEN, TICKETD_CA} */
    public static Builder builder() { return new Builder(); }

    /** Options of a client; {@link #build()} checks them and throws {@link InvalidArgumentException}. */
    public static final class Builder {
        private final List<String> endpoints = new ArrayList<>();
        /** A fixed token (checked at build) or a supplier; the fixed one defaults to TICKETD_TOKEN. */
        private String fixedToken = System.getenv("TICKETD_TOKEN");
        private Supplier<String> tokenSupplier;
        private BearerToken token;
        private Path caFile = envPath("TICKETD_CA");
        private Path certFile;
        private Path keyFile;
        private SSLContext sslContext;
        private Duration attemptTimeout = Duration.ofSeconds(5);
        private Duration callTimeout = Duration.ofSeconds(30);
        private Duration minBackoff = Duration.ofMillis(50);
        private Duration maxBackoff = Duration.ofSeconds(2);

        private Builder() {}

        private static Path envPath(String name) {
            String v = System.getenv(name);
            return v == null || v.isBlank() ? null : Path.of(v);
        }

        /**
         * Base URLs of the nodes. Default: TICKETD_ADDR.
         *
         * @param urls {@code http(s)://host:port}, each possibly a comma-separated list
         * @return this builder
         */
        public Builder endpoints(String... urls) {
            for (String u : urls) {
                for (String part : u.split(",")) {
                    if (!part.isBlank()) endpoints.add(part.trim());
                }
            }
            return this;
        }

        /**
         * {@code Authorization: Bearer <token>} on every request (visible ASCII; null or "": none).
         * Default: TICKETD_TOKEN. Replaces a supplier set before.
         *
         * @param token the token, or null for none
         * @return this builder
         */
        public Builder bearerToken(String token) {
            this.fixedToken = token;
            this.tokenSupplier = null;
            return this;
        }

        /**
         * A token that rotates: {@code supplier} is asked on every request (retries included), so a
         * new token is sent from the next request on. Make it cheap (read a field your rotation
         * updates), not a file read: it runs on every call that goes to the network. A null, blank
         * or non-ASCII answer fails that call with {@link InvalidArgumentException} naming what is
         * wrong (not sent, not retried); an exception it throws, with {@link TicketdException}.
         * Replaces a fixed token set before (and TICKETD_TOKEN).
         *
         * @param supplier asked for the token on every request
         * @return this builder
         */
        public Builder bearerToken(Supplier<String> supplier) {
            if (supplier == null) throw new InvalidArgumentException("bearer token supplier is null; pass bearerToken((String) null) for no token");
            this.tokenSupplier = supplier;
            this.fixedToken = null;
            return this;
        }

        /**
         * The CA certificates to trust for https endpoints. Default: TICKETD_CA, else the JDK's roots.
         *
         * @param pem a PEM file of certificates
         * @return this builder
         */
        public Builder caFile(Path pem) {
            this.caFile = pem;
            return this;
        }

        /**
         * A client certificate and its key, for nodes that ask for one (mutual TLS).
         *
         * @param certPem a PEM file of the certificate chain
         * @param keyPem a PEM file of its key, unencrypted PKCS#8 (RSA, EC or Ed25519)
         * @return this builder
         */
        public Builder clientCertificate(Path certPem, Path keyPem) {
            this.certFile = certPem;
            this.keyFile = keyPem;
            return this;
        }

        /**
         * Your own SSLContext (exclusive with clientCertificate; caFile is then ignored).
         *
         * @param ctx the context
         * @return this builder
         */
        public Builder sslContext(SSLContext ctx) {
            this.sslContext = ctx;
            return this;
        }

        /**
         * The timeout of one HTTP attempt to one endpoint (also the connect timeout). Default 5 s.
         *
         * @param d positive, at most 365 days
         * @return this builder
         */
        public Builder attemptTimeout(Duration d) {
            this.attemptTimeout = d;
            return this;
        }

        /**
         * The bound of a whole call, retries included; an empty sequence cache waits at most this.
         * Default 30 s.
         *
         * @param d positive, at most 365 days
         * @return this builder
         */
        public Builder callTimeout(Duration d) {
            this.callTimeout = d;
            return this;
        }

        /**
         * The bounds of the waits between rounds over the endpoints. Default 50 ms, 2 s.
         *
         * @param min the first round's cap, positive
         * @param max the longest wait, at least min
         * @return this builder
         */
        public Builder backoff(Duration min, Duration max) {
            this.minBackoff = min;
            this.maxBackoff = max;
            return this;
        }

        /**
         * Checks the options and makes the client.
         *
         * @return the client, which sends nothing until a call
         * @throws InvalidArgumentException naming the option that is wrong (no endpoints, a bad URL,
         *     token, duration or TLS file)
         */
        public TicketdClient build() {
            List<String> urls = new ArrayList<>(endpoints);
            if (urls.isEmpty()) {
                String env = System.getenv("TICKETD_ADDR");
                if (env != null) new Builder().endpoints(env).endpoints.forEach(urls::add);
            }
            if (urls.isEmpty()) {
                throw new InvalidArgumentException("no endpoints: pass builder().endpoints(\"http://127.0.0.1:8080\") or set TICKETD_ADDR");
            }
            Set<String> seen = new LinkedHashSet<>();
            List<Endpoint> eps = new ArrayList<>();
            boolean https = false;
            for (String u : urls) {
                Endpoint e = parseEndpoint(u);
                https |= e.base.startsWith("https:");
                if (seen.add(e.base)) eps.add(e);
            }
            token = tokenSupplier != null ? BearerToken.supplied(tokenSupplier) : BearerToken.fixed(fixedToken);
            Durations.requirePositive("attemptTimeout", attemptTimeout);
            Durations.requirePositive("callTimeout", callTimeout);
            Durations.requirePositive("backoff min", minBackoff);
            Durations.requirePositive("backoff max", maxBackoff);
            if (maxBackoff == null || maxBackoff.compareTo(minBackoff) < 0) {
                throw new InvalidArgumentException("backoff: want 0 < min <= max, got min " + minBackoff + ", max " + maxBackoff);
            }
            if ((certFile == null) != (keyFile == null)) {
                throw new InvalidArgumentException("clientCertificate: both the certificate and the key are needed");
            }
            if (sslContext != null && certFile != null) {
                throw new InvalidArgumentException("sslContext and clientCertificate are exclusive: put the key in your SSLContext");
            }
            SSLContext ssl = sslContext;
            if (ssl == null && (caFile != null || certFile != null) && https) {
                try {
                    ssl = Pem.context(caFile, certFile, keyFile);
                } catch (IOException | GeneralSecurityException e) {
                    throw new InvalidArgumentException("TLS files: " + e.getMessage(), e);
                }
            }
            return new TicketdClient(this, eps, ssl);
        }
    }

    static Endpoint parseEndpoint(String raw) {
        String s = raw.strip();
        while (s.endsWith("/")) s = s.substring(0, s.length() - 1);
        URI u;
        try {
            u = new URI(s);
        } catch (URISyntaxException e) {
            throw new InvalidArgumentException("endpoint \"" + raw + "\" is not a URL: " + e.getMessage());
        }
        String scheme = u.getScheme();
        if (!"http".equals(scheme) && !"https".equals(scheme)) {
            throw new InvalidArgumentException("endpoint \"" + raw + "\": want an http:// or https:// base URL such as http://127.0.0.1:8080");
        }
        if (u.getHost() == null || u.getRawAuthority() == null) {
            throw new InvalidArgumentException("endpoint \"" + raw + "\" has no host");
        }
        if (u.getRawUserInfo() != null || u.getRawQuery() != null || u.getRawFragment() != null
            || (u.getRawPath() != null && !u.getRawPath().isEmpty())) {
            throw new InvalidArgumentException("endpoint \"" + raw + "\": want only scheme://host[:port], without path, query or user info");
        }
        return new Endpoint(scheme + "://" + u.getRawAuthority(), u.getRawAuthority());
    }

    static void validateName(String what, String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new InvalidArgumentException(what + " name " + (name == null ? "null" : "\"" + name + "\"")
                + " is invalid; use 1 to 64 of [A-Za-z0-9._-]");
        }
    }

    /**
     * name as it goes into a URL path (the Go SDK's api.PathSegment): as it is, but the dot segments
     * "." and "..", which a client or proxy would resolve away, percent-encoded. Every other valid
     * name is made of unreserved characters only.
     */
    static String pathSegment(String name) {
        switch (name) {
            case ".":
                return "%2E";
            case "..":
                return "%2E%2E";
            default:
                return name;
        }
    }

    // ---- public calls ----

    /**
     * Reserves {@code count} IDs (1 to 10,000,000) of a sequence, uncached, straight from the cluster.
     * Retried over the endpoints until the call timeout; a retry after a lost answer may waste a
     * range (a gap), never hand an ID out twice.
     *
     * @param sequence the sequence's name
     * @param count how many IDs, 1 to 10,000,000
     * @return the IDs reserved
     */
    public Range reserve(String sequence, long count) {
        ensureOpen();
        validateName("sequence", sequence);
        if (count < 1 || count > MAX_RESERVE_COUNT) {
            throw new InvalidArgumentException("count must be between 1 and " + MAX_RESERVE_COUNT + ", got " + count);
        }
        return reserve(sequence, count, deadline(), null);
    }

    /**
     * Creates a sequence with the bounds of {@code settings} (those not set take the server's
     * defaults), idempotently: an existing one with the same settings is no error, one with others
     * is a {@link ConflictException}.
     *
     * @param name the new sequence's name
     * @param settings its bounds
     * @return the sequence as the server shows it
     */
    public SequenceInfo createSequence(String name, SequenceSettings settings) {
        ensureOpen();
        validateName("sequence", name);
        if (name.equals(".") || name.equals("..")) throw new InvalidArgumentException("sequence name \"" + name + "\" is a dot segment");
        if (settings == null) throw new InvalidArgumentException("settings must not be null; SequenceSettings.defaults() takes the server's");
        Answer a = call("PUT", "/v1/sequences/" + pathSegment(name), settings.json(), deadline(), null);
        return sequenceInfo(a);
    }

    /**
     * Creates a sequence with the server's default bounds (1 to 2^63-1), idempotently.
     *
     * @param name the new sequence's name
     * @return the sequence as the server shows it
     */
    public SequenceInfo createSequence(String name) { return createSequence(name, SequenceSettings.defaults()); }

    /**
     * Asks the cluster about a sequence.
     *
     * @param name the sequence's name
     * @return the sequence as the server shows it
     */
    public SequenceInfo sequenceInfo(String name) {
        ensureOpen();
        validateName("sequence", name);
        return sequenceInfo(call("GET", "/v1/sequences/" + pathSegment(name), null, deadline(), null));
    }

    /**
     * The cached handle on a sequence (see {@link TicketdSequence}) with the default
     * {@link SequenceOptions}: the same handle on every call with this name. Share it between
     * threads. Sends nothing until the first {@code next()}.
     *
     * @param name the sequence's name
     * @return the handle
     */
    public TicketdSequence sequence(String name) { return sequence(name, SequenceOptions.defaults()); }

    /**
     * The cached handle on a sequence with these options: one handle per name and client, made on
     * the first call and returned by the later ones. A later call with other options throws
     * {@link InvalidArgumentException} naming what differs (a cache tuned otherwise than asked
     * would be a silent surprise).
     *
     * @param name the sequence's name
     * @param options how its cache sizes ranges
     * @return the handle
     */
    public TicketdSequence sequence(String name, SequenceOptions options) {
        validateName("sequence", name);
        if (options == null) throw new InvalidArgumentException("options must not be null; SequenceOptions.defaults() are the defaults");
        lock.lock();
        try {
            if (closed) throw new ClosedException("ticketd: client closed");
            return sequences.get(name, options, () -> new TicketdSequence(this, name, options));
        } finally {
            lock.unlock();
        }
    }

    /**
     * The handle on the server-made Snowflake IDs of a namespace with the default
     * {@link SnowflakeOptions} (batches of 256 fetched ahead at half the batch): the same handle on
     * every call with this namespace, so {@code c.snowflake("events").next()} is fine in a loop.
     *
     * @param namespace the namespace's name
     * @return the handle
     */
    public SnowflakeRemote snowflake(String namespace) { return snowflake(namespace, SnowflakeOptions.defaults()); }

    /**
     * The handle on the server-made Snowflake IDs of a namespace with these options: one handle per
     * namespace and client, made on the first call and returned by the later ones (until it is
     * closed). A later call with other options throws {@link InvalidArgumentException} naming what
     * differs.
     *
     * @param namespace the namespace's name
     * @param options how it buffers IDs
     * @return the handle
     */
    public SnowflakeRemote snowflake(String namespace, SnowflakeOptions options) {
        validateName("namespace", namespace);
        if (options == null) throw new InvalidArgumentException("options must not be null; SnowflakeOptions.defaults() are the defaults");
        lock.lock();
        try {
            if (closed) throw new ClosedException("ticketd: client closed");
            return remotes.get(namespace, options, () -> new SnowflakeRemote(this, namespace, options));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops every background refill and fetch, waits for their threads to end, drops the caches and
     * stops the HTTP worker threads. Idempotent; later calls on the client and its handles throw
     * {@link ClosedException}.
     */
    @Override
    public void close() {
        List<Thread> threads;
        List<TicketdSequence> seqs;
        List<SnowflakeRemote> rems;
        lock.lock();
        try {
            closed = true;
            threads = new ArrayList<>(background);
            seqs = sequences.removeAll();
            rems = remotes.removeAll();
        } finally {
            lock.unlock();
        }
        closedLatch.countDown();
        seqs.forEach(TicketdSequence::closeCache);
        rems.forEach(SnowflakeRemote::closeCache);
        // A background thread blocked on an HTTP answer is interrupted: the attempt cancels its
        // exchange and the thread ends with ClosedException.
        threads.forEach(Thread::interrupt);
        boolean interrupted = false;
        for (Thread t : threads) {
            while (t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        http = null;
        httpExecutor.shutdownNow();
        try {
            httpExecutor.awaitTermination(10, TimeUnit.SECONDS);
            for (Thread t : httpThreads) t.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            interrupted = true;
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    // ---- internals shared with the handles ----

    /**
     * Forgets a Snowflake handle closed by its owner, so that close() does not hold it for good and
     * the next snowflake(ns) makes a new one.
     */
    void deregister(SnowflakeRemote r) {
        lock.lock();
        try {
            remotes.remove(r.namespace(), r);
        } finally {
            lock.unlock();
        }
    }

    boolean isClosed() { return closed; }

    void ensureOpen() {
        if (closed) throw new ClosedException("ticketd: client closed");
    }

    long deadline() { return System.nanoTime() + callNanos; }

    /**
     * Waits up to nanos; true if the client closed meanwhile. An interrupted caller (client open)
     * gets UnavailableException with its interrupt flag set again, as an interrupted attempt does:
     * the interrupt is the caller's, not a close.
     */
    boolean sleepUnlessClosed(long nanos) {
        try {
            return closedLatch.await(nanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (closed) return true;
            throw new UnavailableException("ticketd: interrupted while waiting to retry", e);
        }
    }

    /**
     * Starts a background thread named ticketd-{what}-N; null when the client is closed. A thread
     * stays in the set until it is seen dead (pruned here), never removed by itself: one that removed
     * itself just before ending could be missed by close(), which joins the set.
     */
    Thread startBackground(String what, Runnable r) {
        lock.lock();
        try {
            if (closed) return null;
            background.removeIf(t -> !t.isAlive());
            Thread t = new Thread(r, "ticketd-" + what + "-" + threadSeq.incrementAndGet());
            t.setDaemon(true);
            background.add(t);
            t.start();
            return t;
        } finally {
            lock.unlock();
        }
    }

    /** The background threads alive now (for tests). */
    int backgroundThreads() {
        lock.lock();
        try {
            return (int) background.stream().filter(Thread::isAlive).count();
        } finally {
            lock.unlock();
        }
    }

    /** One reservation, retried until deadline (Long.MAX_VALUE: until close); the answer is checked. */
    Range reserve(String sequence, long count, long deadline, Consumer<TicketdException> onFailure) {
        Answer a = call("POST", "/v1/sequences/" + pathSegment(sequence) + "/ranges", "{\"count\":" + count + "}", deadline, onFailure);
        long first;
        long last;
        String seq;
        try {
            Map<String, Object> m = Json.object(Json.parse(a.body), "the answer");
            first = Json.getLong(m, "first");
            last = Json.getLong(m, "last");
            seq = Json.getString(m, "sequence");
        } catch (IllegalArgumentException e) {
            throw badAnswer(a, e);
        }
        if (!seq.equals(sequence) || first < 1 || last < first || last - first + 1 != count) {
            throw new TicketdException("ticketd: " + a.endpoint.base + " answered range " + first + ".." + last + " of \"" + seq
                + "\" for " + count + " IDs of \"" + sequence + "\"", a.status, "", "", a.endpoint.base, null);
        }
        return new Range(first, last);
    }

    private SequenceInfo sequenceInfo(Answer a) {
        try {
            Map<String, Object> m = Json.object(Json.parse(a.body), "the answer");
            Object next = m.get("next");
            return new SequenceInfo(Json.getString(m, "name"),
                next instanceof Long ? OptionalLong.of((Long) next) : OptionalLong.empty(),
                Json.getLong(m, "start"), Json.getLong(m, "max"), Json.getLong(m, "remaining", 0));
        } catch (IllegalArgumentException e) {
            throw badAnswer(a, e);
        }
    }

    static TicketdException badAnswer(Answer a, IllegalArgumentException e) {
        return new TicketdException("ticketd: " + a.endpoint.base + " answered with a body that is not the expected JSON: " + e.getMessage(),
            a.status, "", "", a.endpoint.base, e);
    }

    /**
     * Sends a request round the endpoints, starting at the preferred one, until a 2xx (returned), a
     * final error (thrown, typed) or the deadline (UnavailableException with the last failure).
     * onFailure sees every retried failure.
     */
    Answer call(String method, String path, String body, long deadline, Consumer<TicketdException> onFailure) {
        TicketdException last = null;
        int n = endpoints.size();
        for (int round = 1; ; round++) {
            long retryAfter = 0;
            int start = preferred.get();
            for (int k = 0; k < n; k++) {
                int idx = (start + k) % n;
                long remaining = remaining(deadline);
                if (remaining <= 0) throw unavailable(last);
                Answer a;
                try {
                    a = attempt(endpoints.get(idx), method, path, body, Math.min(attemptNanos, remaining));
                } catch (TransportFailure f) {
                    // A timeout cut short by the call's deadline is the deadline's doing, not the
                    // endpoint's: the failure before it says more (the Go SDK's rule).
                    if (remaining(deadline) <= 0 && last != null) throw unavailable(last);
                    last = f.error;
                    if (onFailure != null) onFailure.accept(last);
                    continue;
                }
                if (a.status / 100 == 2) {
                    preferred.set(leaderOr(idx, a.leader));
                    return a;
                }
                RuntimeException e = Problems.typed(a);
                if (!retryable(a.status) || !(e instanceof TicketdException)) {
                    preferred.set(leaderOr(idx, a.leader));
                    throw e;
                }
                last = (TicketdException) e;
                retryAfter = Math.max(retryAfter, a.retryAfterNanos);
                if (onFailure != null) onFailure.accept(last);
            }
            long remaining = remaining(deadline);
            if (remaining <= 0) throw unavailable(last);
            long wait = Math.max(backoffNanos(round), Math.min(retryAfter, MAX_RETRY_AFTER_NANOS));
            if (sleepUnlessClosed(Math.min(wait, remaining))) throw new ClosedException("ticketd: client closed", last);
        }
    }

    static long remaining(long deadline) {
        return deadline == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - System.nanoTime();
    }

    UnavailableException unavailable(TicketdException last) {
        if (closed) throw new ClosedException("ticketd: client closed", last);
        String msg = last == null ? "ticketd: unavailable: no endpoint answered within the call timeout"
            : "ticketd: unavailable: no endpoint could serve within the call timeout; last failure: " + last.getMessage();
        return last == null ? new UnavailableException(msg)
            : new UnavailableException(msg, last.status(), last.problemType(), last.detail(), last.endpoint(), last);
    }

    /** Full jitter: the k-th wait is uniform in [0, min(max, min·2^(k-1))]. */
    long backoffNanos(int round) {
        long cap = minBackoffNanos << Math.min(round - 1, 30);
        if (cap <= 0 || cap > maxBackoffNanos) cap = maxBackoffNanos;
        return ThreadLocalRandom.current().nextLong(cap + 1);
    }

    static boolean retryable(int status) {
        return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
    }

    private int leaderOr(int idx, String leader) {
        if (leader == null || leader.isEmpty()) return idx;
        for (int i = 0; i < endpoints.size(); i++) {
            if (endpoints.get(i).host.equals(leader)) return i;
        }
        return idx;
    }

    /** A failure before any HTTP answer: connection refused, reset, attempt timeout, no token. */
    static final class TransportFailure extends Exception {
        private static final long serialVersionUID = 1L;
        final transient UnavailableException error;
        /** The token supplier gave no token: not the endpoint's fault. */
        final boolean noToken;

        TransportFailure(UnavailableException error) {
            this(error, false);
        }

        TransportFailure(UnavailableException error, boolean noToken) {
            super(error.getMessage(), null, false, false);
            this.error = error;
            this.noToken = noToken;
        }
    }

    /** One HTTP exchange with one endpoint, bounded by timeoutNanos. */
    Answer attempt(Endpoint ep, String method, String path, String body, long timeoutNanos) throws TransportFailure {
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(ep.base + path))
            .timeout(Duration.ofNanos(Math.max(timeoutNanos, 1_000_000)))
            .header("Accept", "application/json, application/problem+json");
        if (body != null) {
            rb.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        }
        String auth;
        try {
            auth = token.header(); // a supplier's answer, asked per request
        } catch (InvalidArgumentException | TicketdException e) {
            // No token for this attempt: it fails as a node that did not answer does, and is
            // retried (a vault sealed for a moment, a secret file caught mid-rewrite), as the Go
            // SDK's WithBearerTokenFunc is; a call that never gets one ends unavailable, saying why.
            throw new TransportFailure(new UnavailableException("ticketd: " + method + " " + ep.base + path
                + ": no bearer token: " + e.getMessage(), 0, "", "", "", e), true);
        }
        if (auth != null) rb.header("Authorization", auth);
        HttpClient h = http;
        if (h == null) throw new ClosedException("ticketd: client closed");
        CompletableFuture<HttpResponse<String>> f;
        try {
            f = h.sendAsync(rb.build(), BoundedBody.handler(BoundedBody.MAX_ANSWER_BYTES));
        } catch (RuntimeException e) { // the executor was shut down by close()
            if (closed) throw new ClosedException("ticketd: client closed");
            throw e;
        }
        HttpResponse<String> resp;
        try {
            // The request's timeout covers the answer's headers; this one the whole exchange, body
            // included (a node stopped mid-body), so that an attempt never outlasts its bound.
            resp = f.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            if (closed) throw new ClosedException("ticketd: client closed");
            throw new UnavailableException("ticketd: interrupted while waiting for " + ep.base, e);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw transport(ep, method, path, "timed out", e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            if (closed) throw new ClosedException("ticketd: client closed");
            throw transport(ep, method, path, c.toString(), c);
        }
        String leader = resp.headers().firstValue(LEADER_HEADER).orElse("");
        long ra = resp.statusCode() / 100 == 2 ? 0 : parseRetryAfter(resp.headers().firstValue("Retry-After").orElse(""));
        return new Answer(ep, resp.statusCode(), resp.body() == null ? "" : resp.body(), leader, ra);
    }

    private static TransportFailure transport(Endpoint ep, String method, String path, String why, Throwable cause) {
        return new TransportFailure(new UnavailableException("ticketd: " + method + " " + ep.base + path + ": " + why,
            0, "", "", ep.base, cause));
    }

    /** Retry-After as delay-seconds or an HTTP date, capped at 30 s; 0 when absent or bad. */
    static long parseRetryAfter(String v) {
        v = v.strip();
        if (v.isEmpty()) return 0;
        try {
            long s = Long.parseLong(v);
            return s <= 0 ? 0 : Math.min(TimeUnit.SECONDS.toNanos(Math.min(s, 30)), MAX_RETRY_AFTER_NANOS);
        } catch (NumberFormatException e) {
            // not seconds: an HTTP date
        }
        try {
            ZonedDateTime t = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME);
            long d = Duration.between(ZonedDateTime.now(t.getZone()), t).toNanos();
            return d <= 0 ? 0 : Math.min(d, MAX_RETRY_AFTER_NANOS);
        } catch (RuntimeException e) {
            return 0;
        }
    }
}
