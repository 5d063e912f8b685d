package io.ticketd.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * An in-process stand-in for one ticketd node, speaking the HTTP contract of the routes the Java
 * client uses (sequences, ranges, Snowflake IDs, problem documents). Several nodes share one
 * {@link Backend}, so a reservation on any node draws from the same sequence, as on a cluster.
 * Each node takes canned faults ({@link #fail}) before serving, and counts what it was asked.
 */
final class StandIn implements AutoCloseable {
    /** The shared state of a stand-in cluster. */
    static final class Backend {
        final Map<String, long[]> seqs = new ConcurrentHashMap<>(); // name -> {next, max, start}
        final Map<String, AtomicLong> namespaces = new ConcurrentHashMap<>();
        volatile String token; // required bearer token, or null
        /** A broken cluster: every reservation answers from ID 1 again. */
        volatile boolean rewind;
        final AtomicInteger reservations = new AtomicInteger();
        final List<Long> counts = Collections.synchronizedList(new ArrayList<>());

        void create(String name, long start, long max) {
            seqs.put(name, new long[] {start, max, start});
        }

        void namespace(String ns) {
            namespaces.put(ns, new AtomicLong(1L << 22));
        }
    }

    /** A canned answer: status, problem type, Retry-After seconds (or -1), leader header (or null). */
    record Fault(int status, String type, int retryAfter, String leader) {}

    final Backend backend;
    final String node;
    final int workerId;
    private final HttpServer server;
    private final ExecutorService exec = Executors.newCachedThreadPool();
    final ConcurrentLinkedDeque<Fault> faults = new ConcurrentLinkedDeque<>();
    /** A fault answered to every request while set (after the queue is empty). */
    volatile Fault always;
    /** Header X-Ticketd-Leader on every answer, or null. */
    volatile String leaderHint;
    volatile long delayMillis;
    /** Rewrites the body of a successful Snowflake answer (tests of the client's checks). */
    volatile Function<String, String> snowflakeRewrite;
    /** Spaces added to every successful answer (still valid JSON): an over-long body. */
    volatile int padAnswers;
    /** The raw (undecoded) path of the last request. */
    volatile String lastRawPath;
    final AtomicInteger requests = new AtomicInteger();
    final AtomicInteger snowflakeRequests = new AtomicInteger();

    StandIn(Backend backend, String node, int workerId) throws IOException {
        this(backend, node, workerId, null);
    }

    StandIn(Backend backend, String node, int workerId, SSLContext tls) throws IOException {
        this(backend, node, workerId, tls, false);
    }

    /** With tls, a HTTPS node; needClientAuth: it refuses clients without a certificate its context trusts. */
    StandIn(Backend backend, String node, int workerId, SSLContext tls, boolean needClientAuth) throws IOException {
        this.backend = backend;
        this.node = node;
        this.workerId = workerId;
        InetSocketAddress addr = new InetSocketAddress("127.0.0.1", 0);
        if (tls != null) {
            HttpsServer s = HttpsServer.create(addr, 64);
            s.setHttpsConfigurator(new HttpsConfigurator(tls) {
                @Override
                public void configure(HttpsParameters params) {
                    SSLParameters sp = tls.getDefaultSSLParameters();
                    sp.setNeedClientAuth(needClientAuth);
                    params.setSSLParameters(sp);
                }
            });
            server = s;
        } else {
            server = HttpServer.create(addr, 64);
        }
        server.createContext("/", this::handle);
        server.setExecutor(exec);
        server.start();
    }

    String url() {
        String scheme = server instanceof HttpsServer ? "https" : "http";
        return scheme + "://127.0.0.1:" + server.getAddress().getPort();
    }

    String host() { return "127.0.0.1:" + server.getAddress().getPort(); }

    void fail(int times, int status, String type, int retryAfter) {
        for (int i = 0; i < times; i++) faults.add(new Fault(status, type, retryAfter, null));
    }

    @Override
    public void close() {
        server.stop(0);
        exec.shutdownNow();
        try {
            exec.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            requests.incrementAndGet();
            lastRawPath = ex.getRequestURI().getRawPath();
            String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            if (delayMillis > 0) Thread.sleep(delayMillis);
            if (leaderHint != null) ex.getResponseHeaders().set("X-Ticketd-Leader", leaderHint);
            String path = ex.getRequestURI().getPath();
            String[] p = path.split("/"); // "", "v1", kind, name, [sub]
            if (path.endsWith("/ids")) snowflakeRequests.incrementAndGet();
            Fault f = faults.poll();
            if (f == null) f = always;
            if (f != null) {
                if (f.leader != null) ex.getResponseHeaders().set("X-Ticketd-Leader", f.leader);
                if (f.retryAfter >= 0) ex.getResponseHeaders().set("Retry-After", String.valueOf(f.retryAfter));
                problem(ex, f.status, f.type, "canned fault");
                return;
            }
            String token = backend.token;
            if (token != null && !("Bearer " + token).equals(ex.getRequestHeaders().getFirst("Authorization"))) {
                problem(ex, 401, "unauthorized", "no or unknown token");
                return;
            }
            String method = ex.getRequestMethod();
            if (p.length == 4 && p[2].equals("sequences") && method.equals("PUT")) {
                Map<String, Object> m = body.isBlank() ? Map.of() : Json.object(Json.parse(body), "body");
                long start = Json.getLong(m, "start", 1);
                long max = Json.getLong(m, "max", Long.MAX_VALUE);
                boolean created = backend.seqs.putIfAbsent(p[3], new long[] {start, max, start}) == null;
                json(ex, created ? 201 : 200, seqJson(p[3]));
            } else if (p.length == 4 && p[2].equals("sequences") && method.equals("GET")) {
                if (!backend.seqs.containsKey(p[3])) {
                    problem(ex, 404, "sequence-not-found", "no sequence " + p[3]);
                } else {
                    json(ex, 200, seqJson(p[3]));
                }
            } else if (p.length == 5 && p[2].equals("sequences") && p[4].equals("ranges") && method.equals("POST")) {
                long count = Json.getLong(Json.object(Json.parse(body), "body"), "count");
                backend.counts.add(count);
                long[] s = backend.seqs.get(p[3]);
                if (s == null) {
                    problem(ex, 404, "sequence-not-found", "no sequence " + p[3]);
                    return;
                }
                long first;
                synchronized (s) {
                    if (s[0] > s[1] || s[1] - s[0] + 1 < count) {
                        problem(ex, 409, "sequence-exhausted", "fewer than " + count + " left");
                        return;
                    }
                    first = backend.rewind ? 1 : s[0];
                    s[0] = first + count;
                }
                backend.reservations.incrementAndGet();
                json(ex, 200, "{\"sequence\":" + Json.quote(p[3]) + ",\"first\":" + first + ",\"last\":" + (first + count - 1) + "}");
            } else if (p.length == 5 && p[2].equals("namespaces") && p[4].equals("ids") && method.equals("POST")) {
                AtomicLong ns = backend.namespaces.get(p[3]);
                if (ns == null) {
                    problem(ex, 404, "namespace-not-found", "no namespace " + p[3]);
                    return;
                }
                long count = body.isBlank() ? 1 : Json.getLong(Json.object(Json.parse(body), "body"), "count", 1);
                StringBuilder ids = new StringBuilder();
                long base = ns.getAndAdd(count);
                for (long i = 0; i < count; i++) {
                    ids.append(i == 0 ? "" : ",").append(((base + i) << 10) | workerId);
                }
                String out = "{\"namespace\":" + Json.quote(p[3]) + ",\"node\":" + Json.quote(node) + ",\"worker_id\":" + workerId
                    + ",\"ids\":[" + ids + "]}";
                Function<String, String> rw = snowflakeRewrite;
                json(ex, 200, rw == null ? out : rw.apply(out));
            } else {
                problem(ex, 404, "route-not-found", "no route " + method + " " + path);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            problem(ex, 500, "internal", e.toString());
        }
    }

    private String seqJson(String name) {
        long[] s = backend.seqs.get(name);
        synchronized (s) {
            String next = s[0] > s[1] ? "null" : String.valueOf(s[0]);
            long remaining = s[0] > s[1] ? 0 : s[1] - s[0] + 1;
            return "{\"name\":" + Json.quote(name) + ",\"next\":" + next + ",\"start\":" + s[2] + ",\"max\":" + s[1]
                + ",\"remaining\":" + remaining + "}";
        }
    }

    private static void problem(HttpExchange ex, int status, String type, String detail) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/problem+json");
        send(ex, status, "{\"type\":\"urn:ticketd:problem:" + type + "\",\"title\":\"" + type + "\",\"status\":" + status
            + ",\"detail\":" + Json.quote(detail) + "}");
    }

    private void json(HttpExchange ex, int status, String body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        send(ex, status, padAnswers > 0 ? body + " ".repeat(padAnswers) : body);
    }

    private static void send(HttpExchange ex, int status, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }
}
