package io.ticketd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClientTest {
    StandIn.Backend backend;
    StandIn a;
    StandIn b;

    @BeforeEach
    void up() throws Exception {
        backend = new StandIn.Backend();
        backend.create("orders", 1, Long.MAX_VALUE);
        a = new StandIn(backend, "a", 1);
        b = new StandIn(backend, "b", 2);
    }

    @AfterEach
    void down() {
        a.close();
        b.close();
        assertEquals(0, TestSupport.ticketdThreads(), "ticketd-* threads left after the test");
    }

    TicketdClient client(StandIn... nodes) {
        String[] urls = new String[nodes.length];
        for (int i = 0; i < nodes.length; i++) urls[i] = nodes[i].url();
        return TicketdClient.builder().endpoints(urls).callTimeout(Duration.ofMillis(600))
            .attemptTimeout(Duration.ofMillis(300)).backoff(Duration.ofMillis(5), Duration.ofMillis(40)).build();
    }

    @Test
    void reserve_ReturnsTheServersRange() {
        try (TicketdClient c = client(a)) {
            assertEquals(new Range(1, 10), c.reserve("orders", 10));
            assertEquals(new Range(11, 15), c.reserve("orders", 5));
            SequenceInfo info = c.sequenceInfo("orders");
            assertEquals(16, info.next().getAsLong());
        }
    }

    @Test
    void problems_AreTypedByProblemDocument() {
        Object[][] cases = {
            {400, "bad-request", InvalidArgumentException.class},
            {413, "body-too-large", InvalidArgumentException.class},
            {401, "unauthorized", UnauthorizedException.class},
            {403, "forbidden", ForbiddenException.class},
            {404, "sequence-not-found", NotFoundException.class},
            {409, "sequence-exhausted", ExhaustedException.class},
            {409, "conflict", ConflictException.class},
        };
        try (TicketdClient c = client(a)) {
            for (Object[] k : cases) {
                a.fail(1, (int) k[0], (String) k[1], -1);
                RuntimeException thrown = assertThrows(RuntimeException.class, () -> c.reserve("orders", 1));
                assertEquals(k[2], thrown.getClass(), "status " + k[0]);
                TicketdFailure e = (TicketdFailure) thrown;
                assertEquals(k[0], e.status());
                assertEquals("urn:ticketd:problem:" + k[1], e.problemType());
                assertEquals(a.url(), e.endpoint());
                assertEquals("canned fault", e.detail());
            }
            // A 404 of an unknown route is no NotFound: the library's base type, never a bare status.
            a.fail(1, 404, "route-not-found", -1);
            TicketdException e = assertThrows(TicketdException.class, () -> c.reserve("orders", 1));
            assertEquals(TicketdException.class, e.getClass());
            // Final answers are not retried: one request each.
            assertEquals(cases.length + 1, a.requests.get());
        }
    }

    /**
     * Java's idioms: a call on a closed client is an IllegalStateException, a bad argument an
     * IllegalArgumentException; every kind is a TicketdFailure, and its copy for a caller (a
     * background failure thrown to each waiter) keeps its kind and fields, with it as the cause.
     */
    @Test
    void exceptionKinds_JavasIdioms_AndCopiesForCallersKeepTheKind() {
        assertInstanceOf(IllegalStateException.class, new ClosedException("closed"));
        assertInstanceOf(IllegalArgumentException.class, new InvalidArgumentException("bad"));
        List<RuntimeException> kinds = List.of(
            new TicketdException("m", 500, "t", "d", "http://e:1", null),
            new UnavailableException("m", 503, "t", "d", "http://e:1", null),
            new ClockBehindException("m", 503, "t", "d", "http://e:1", null, 1500),
            new NotFoundException("m", 404, "t", "d", "http://e:1", null),
            new ExhaustedException("m", 409, "t", "d", "http://e:1", null),
            new UnauthorizedException("m", 401, "t", "d", "http://e:1", null),
            new ForbiddenException("m", 403, "t", "d", "http://e:1", null),
            new ConflictException("m", 409, "t", "d", "http://e:1", null),
            new InvalidArgumentException("m", 400, "t", "d", "http://e:1", null),
            new ClosedException("m"));
        for (RuntimeException e : kinds) {
            TicketdFailure f = assertInstanceOf(TicketdFailure.class, e);
            RuntimeException copy = ForCaller.copy(e);
            assertEquals(e.getClass(), copy.getClass());
            assertSame(e, copy.getCause());
            assertEquals(e.getMessage(), copy.getMessage());
            TicketdFailure g = (TicketdFailure) copy;
            assertEquals(List.of(f.status(), f.problemType(), f.detail(), f.endpoint()),
                List.of(g.status(), g.problemType(), g.detail(), g.endpoint()), e.getClass().getSimpleName());
        }
        assertEquals(1500, ((ClockBehindException) ForCaller.copy(kinds.get(2))).behindMillis());
    }

    @Test
    void refusedBeforeSending_InvalidArgument() {
        try (TicketdClient c = client(a)) {
            assertThrows(InvalidArgumentException.class, () -> c.reserve("bad name", 1));
            assertThrows(InvalidArgumentException.class, () -> c.reserve("orders", 0));
            assertThrows(InvalidArgumentException.class, () -> c.reserve("orders", 10_000_001));
            assertThrows(InvalidArgumentException.class, () -> c.sequence("a/b"));
            assertEquals(0, a.requests.get());
        }
        assertThrows(InvalidArgumentException.class, () -> TicketdClient.builder().endpoints("ftp://x").build());
        assertThrows(InvalidArgumentException.class, () -> TicketdClient.builder().endpoints("http://x:1/path").build());
        assertThrows(InvalidArgumentException.class, () -> TicketdClient.builder().endpoints(a.url()).bearerToken("a b").build());
    }

    @Test
    void unavailable_AfterTheCallTimeout_WithTheLastFailure() {
        a.always = new StandIn.Fault(503, "unavailable", -1, null);
        try (TicketdClient c = client(a, b)) {
            b.always = a.always;
            long t0 = System.nanoTime();
            UnavailableException e = assertThrows(UnavailableException.class, () -> c.reserve("orders", 1));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 550 && ms < 1500, "gave up after " + ms + " ms, call timeout 600 ms");
            assertInstanceOf(UnavailableException.class, e.getCause());
            assertEquals(503, e.status());
            assertTrue(a.requests.get() >= 2 && b.requests.get() >= 2, "retried over both endpoints: " + a.requests + ", " + b.requests);
        }
    }

    @Test
    void retries_OverEndpoints_AndKeepsTheOneThatAnswered() throws Exception {
        StandIn dead = new StandIn(backend, "dead", 3);
        String deadUrl = dead.url();
        dead.close(); // connection refused from now on
        try (TicketdClient c = TicketdClient.builder().endpoints(deadUrl, a.url()).callTimeout(Duration.ofSeconds(5))
            .backoff(Duration.ofMillis(5), Duration.ofMillis(40)).build()) {
            a.fail(2, 503, "unavailable", -1); // the first round fails on both, the second on a once more
            assertEquals(new Range(1, 1), c.reserve("orders", 1));
            int before = a.requests.get();
            assertEquals(new Range(2, 2), c.reserve("orders", 1));
            assertEquals(before + 1, a.requests.get(), "the next call goes straight to the endpoint that answered");
        }
    }

    @Test
    void leaderHint_IsFollowedOnlyWhenItIsAnEndpoint() {
        try (TicketdClient c = client(a, b)) {
            a.leaderHint = b.host();
            c.reserve("orders", 1); // a answers, names b
            a.leaderHint = null;
            c.reserve("orders", 1);
            assertEquals(1, a.requests.get());
            assertEquals(1, b.requests.get(), "the second call went to the leader a named");
            b.leaderHint = "10.9.9.9:8080"; // not an endpoint: ignored
            c.reserve("orders", 1);
            c.reserve("orders", 1);
            assertEquals(1, a.requests.get());
            assertEquals(3, b.requests.get());
        }
    }

    @Test
    void retryAfter_IsHonoured() {
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url()).callTimeout(Duration.ofSeconds(5))
            .backoff(Duration.ofMillis(1), Duration.ofMillis(2)).build()) {
            a.fail(1, 503, "unavailable", 1);
            long t0 = System.nanoTime();
            c.reserve("orders", 1);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 950, "waited " + ms + " ms after Retry-After: 1");
        }
        assertEquals(TimeUnit.SECONDS.toNanos(30), TicketdClient.parseRetryAfter("120"), "capped at 30 s");
        assertEquals(0, TicketdClient.parseRetryAfter("soon"));
    }

    @Test
    void backoff_IsFullJitterWithinTheBounds() {
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url()).backoff(Duration.ofMillis(50), Duration.ofSeconds(2)).build()) {
            for (int round = 1; round <= 12; round++) {
                long cap = Math.min(TimeUnit.SECONDS.toNanos(2), TimeUnit.MILLISECONDS.toNanos(50) << (round - 1));
                long max = 0;
                for (int i = 0; i < 2000; i++) {
                    long w = c.backoffNanos(round);
                    assertTrue(w >= 0 && w <= cap, "round " + round + ": " + w);
                    max = Math.max(max, w);
                }
                assertTrue(max > cap / 2, "round " + round + ": the waits spread up to the cap");
            }
        }
    }

    @Test
    void bearerToken_IsSent() {
        backend.token = "s3cret";
        try (TicketdClient c = client(a)) {
            assertThrows(UnauthorizedException.class, () -> c.reserve("orders", 1));
        }
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url()).bearerToken("s3cret").build()) {
            assertEquals(1, c.reserve("orders", 1).first());
        }
    }

    /** A token supplier is asked per request, so that the token rotates with the application's. */
    @Test
    void bearerTokenSupplier_AskedPerRequest_TokensRotate() {
        backend.token = "one";
        AtomicReference<String> current = new AtomicReference<>("one");
        AtomicInteger asked = new AtomicInteger();
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url()).bearerToken(() -> {
            asked.incrementAndGet();
            return current.get();
        }).build()) {
            assertEquals(0, asked.get(), "not asked before a request");
            assertEquals(1, c.reserve("orders", 1).first());
            backend.token = "two"; // the cluster rotates...
            assertThrows(UnauthorizedException.class, () -> c.reserve("orders", 1));
            current.set("two"); // ...and the application's supplier follows
            assertEquals(2, c.reserve("orders", 1).first());
            assertEquals(3, asked.get(), "once per request");
        }
        assertThrows(InvalidArgumentException.class, () -> TicketdClient.builder().bearerToken((java.util.function.Supplier<String>) null));
    }

    /**
     * A supplier that throws or answers no token fails that attempt as a node that did not answer
     * does, as the Go SDK's WithBearerTokenFunc does: retried (a vault sealed for a moment, a
     * secret file caught mid-rewrite), nothing sent without a token, and a call that never gets
     * one ends unavailable, its cause saying what was wrong.
     */
    @Test
    void bearerTokenSupplier_FailingForAMoment_IsRetried_NeverGettingOne_Unavailable() {
        backend.token = "one";
        java.util.ArrayDeque<Object> answers = new java.util.ArrayDeque<>(java.util.List.of(new IllegalStateException("sealed"), " \t"));
        AtomicReference<String> after = new AtomicReference<>("one");
        java.util.function.Supplier<String> supplier = () -> {
            Object f = answers.poll();
            if (f instanceof RuntimeException) throw (RuntimeException) f;
            return f != null ? (String) f : after.get();
        };
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url()).bearerToken(supplier)
                .callTimeout(Duration.ofMillis(400)).backoff(Duration.ofMillis(5), Duration.ofMillis(20)).build()) {
            assertEquals(1, c.reserve("orders", 1).first(), "retried past the supplier's two failures");
            assertEquals(1, a.requests.get(), "nothing sent without a token");
            for (String[] bad : new String[][] {{null, "supplier returned null"}, {" \t", "supplier returned a blank token"},
                    {"t\u00e9", "U+00E9 at 1"}}) {
                after.set(bad[0]);
                UnavailableException e = assertThrows(UnavailableException.class, () -> c.reserve("orders", 1));
                assertTrue(e.getMessage().contains(bad[1]), e.getMessage());
            }
            answers.add(new IllegalStateException("vault down"));
            after.set("one");
            assertEquals(2, c.reserve("orders", 1).first());
            assertEquals(2, a.requests.get(), "nothing sent with a bad token");
        }
    }

    @Test
    void problems_TypedByProblemTypeFirst_ThenStatus() {
        // The Go and Python clients' rule: a known problem type decides the kind whatever the
        // status (a proxy or an older node may answer it with another one).
        Object[][] cases = {
            {429, "clock-behind", ClockBehindException.class},
            {500, "sequence-exhausted", ExhaustedException.class},
            {400, "sequence-not-found", NotFoundException.class},
            {503, "unavailable", UnavailableException.class},
            {409, "conflict", ConflictException.class},
        };
        TicketdClient.Endpoint ep = new TicketdClient.Endpoint("http://127.0.0.1:1", "127.0.0.1:1");
        for (Object[] k : cases) {
            String body = "{\"type\":\"urn:ticketd:problem:" + k[1] + "\",\"title\":\"t\",\"clock_behind_ms\":1500}";
            RuntimeException e = Problems.typed(new TicketdClient.Answer(ep, (int) k[0], body, "", 0));
            assertEquals(k[2], e.getClass(), k[0] + " " + k[1]);
            assertEquals(k[0], ((TicketdFailure) e).status());
        }
        RuntimeException e = Problems.typed(new TicketdClient.Answer(ep, 429,
            "{\"type\":\"urn:ticketd:problem:clock-behind\",\"clock_behind_ms\":1500}", "", 0));
        assertEquals(1500, ((ClockBehindException) e).behindMillis());
    }

    @Test
    void builder_HugeDuration_InvalidArgument() {
        Duration huge = Duration.ofSeconds(Long.MAX_VALUE);
        assertThrows(InvalidArgumentException.class, () -> TicketdClient.builder().endpoints(a.url()).callTimeout(huge).build());
        assertThrows(InvalidArgumentException.class, () -> TicketdClient.builder().endpoints(a.url()).attemptTimeout(huge).build());
        assertThrows(InvalidArgumentException.class,
            () -> TicketdClient.builder().endpoints(a.url()).backoff(Duration.ofMillis(5), huge).build());
    }

    @Test
    void overlongAnswer_IsAFailedAttempt_ThenUnavailable() {
        a.padAnswers = 2 << 20; // 2 MiB of spaces after the JSON: valid, but over the 1 MiB cap
        try (TicketdClient c = client(a, b)) {
            // a reserved 1..10 but its answer is refused; b's is taken (a gap, never a duplicate).
            assertEquals(new Range(11, 20), c.reserve("orders", 10));
            assertEquals(1, a.requests.get());
            b.padAnswers = a.padAnswers;
            UnavailableException e = assertThrows(UnavailableException.class, () -> c.reserve("orders", 10));
            assertTrue(e.getMessage().contains("1048576"), e.getMessage());
        }
    }

    @Test
    void interruptedWhileBackingOff_UnavailableNotClosed_InterruptKept() throws Exception {
        a.always = new StandIn.Fault(503, "unavailable", 5, null); // Retry-After 5 s: a long wait
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url()).callTimeout(Duration.ofSeconds(20))
                .attemptTimeout(Duration.ofSeconds(2)).backoff(Duration.ofMillis(5), Duration.ofMillis(40)).build()) {
            AtomicReference<Throwable> got = new AtomicReference<>();
            AtomicBoolean flag = new AtomicBoolean();
            Thread t = new Thread(() -> {
                try {
                    c.reserve("orders", 1);
                } catch (RuntimeException e) {
                    got.set(e);
                    flag.set(Thread.currentThread().isInterrupted());
                }
            });
            t.start();
            TestSupport.eventually(Duration.ofSeconds(5), () -> Arrays.stream(t.getStackTrace())
                .anyMatch(f -> f.getMethodName().equals("sleepUnlessClosed")), "the caller backs off");
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(5));
            assertInstanceOf(UnavailableException.class, got.get());
            assertTrue(flag.get(), "the interrupt flag is kept");
        }
    }

    @Test
    void httpThreads_DeadOnesArePruned() throws Exception {
        try (TicketdClient c = client(a)) {
            for (int i = 0; i < 3; i++) {
                Thread t = c.newHttpThread(() -> {});
                t.start();
                t.join();
            }
            Thread notStarted = c.newHttpThread(() -> {}); // made but not started yet: kept
            assertEquals(1, c.httpThreadsTracked());
            notStarted.start();
            notStarted.join();
        }
    }

    @Test
    void oneHandlePerName_TheReadmesOneLinerFetchesOnce() {
        backend.namespace("ev");
        try (TicketdClient c = client(a)) {
            assertSame(c.sequence("orders"), c.sequence("orders"), "one sequence handle per name");
            assertNotSame(c.sequence("orders"), c.sequence("other"));
            SnowflakeRemote first = c.snowflake("ev");
            // The README's c.snowflake("events").next(), in a loop: one handle, one batch.
            for (int i = 0; i < 100; i++) {
                assertSame(first, c.snowflake("ev"), "call " + i);
                c.snowflake("ev").next();
            }
            assertEquals(1, c.remoteHandles(), "the client keeps one Snowflake handle");
            assertEquals(2, c.sequenceHandles(), "and one sequence handle per name");
            assertEquals(1, a.snowflakeRequests.get(), "100 IDs of a batch of 256: one fetch");
        }
    }

    /**
     * A second handle with other options is refused, naming what differs: the first call's options
     * silently winning would hand a caller a cache tuned otherwise than it asked, depending on which
     * call site ran first. Equal options (another object) give the same handle.
     */
    @Test
    void sameNameOtherOptions_Refused_NamingTheDifference() {
        try (TicketdClient c = client(a)) {
            TicketdSequence s = c.sequence("orders");
            assertSame(s, c.sequence("orders", SequenceOptions.builder().coverage(Duration.ofSeconds(10)).build()), "equal options");
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> c.sequence("orders", SequenceOptions.builder().coverage(Duration.ofSeconds(5)).minRange(10).build()));
            assertTrue(e.getMessage().contains("coverage PT5S (the handle's: PT10S), minRange 10 (the handle's: 1000)"), e.getMessage());
            SnowflakeRemote r = c.snowflake("ev", SnowflakeOptions.builder().batch(100).build());
            e = assertThrows(InvalidArgumentException.class, () -> c.snowflake("ev"));
            assertTrue(e.getMessage().contains("batch 256 (the handle's: 100), lowWater 128 (the handle's: 50)"), e.getMessage());
            assertSame(r, c.snowflake("ev", SnowflakeOptions.builder().batch(100).lowWater(50).build()));
        }
    }

    @Test
    void options_RefuseBadValues() {
        assertThrows(InvalidArgumentException.class, () -> SequenceOptions.builder().coverage(Duration.ZERO).build());
        assertThrows(InvalidArgumentException.class, () -> SequenceOptions.builder().coverage(null).build());
        assertThrows(InvalidArgumentException.class, () -> SequenceOptions.builder().minRange(0).build());
        assertThrows(InvalidArgumentException.class, () -> SequenceOptions.builder().minRange(2000).maxRange(1999).build());
        assertThrows(InvalidArgumentException.class, () -> SequenceOptions.builder().maxRange(10_000_001).build());
        assertThrows(InvalidArgumentException.class, () -> SnowflakeOptions.builder().batch(0).build());
        assertThrows(InvalidArgumentException.class, () -> SnowflakeOptions.builder().batch(10_001).build());
        assertThrows(InvalidArgumentException.class, () -> SnowflakeOptions.builder().batch(10).lowWater(11).build());
        assertThrows(InvalidArgumentException.class, () -> SnowflakeOptions.builder().lowWater(-1).build());
        assertThrows(InvalidArgumentException.class, () -> SnowflakeOptions.builder().maxAge(Duration.ofMillis(99)).build());
        assertThrows(InvalidArgumentException.class, () -> SnowflakeOptions.builder().maxAge(null).build());
        assertEquals(Duration.ofMinutes(10), SnowflakeOptions.defaults().maxAge());
        assertEquals(5, SnowflakeOptions.builder().batch(10).build().lowWater(), "half the batch, whatever the batch");
        assertThrows(InvalidArgumentException.class, () -> SequenceSettings.builder().start(0).build());
        assertThrows(InvalidArgumentException.class, () -> SequenceSettings.builder().start(10).max(9).build());
        assertThrows(InvalidArgumentException.class, () -> SequenceSettings.builder().max(0).build());
    }

    @Test
    void createSequence_SendsTheBoundsSet_OnlyThose() {
        try (TicketdClient c = client(a)) {
            SequenceInfo info = c.createSequence("bounded", SequenceSettings.builder().start(100).max(200).build());
            assertEquals(100, info.start());
            assertEquals(200, info.max());
            info = c.createSequence("from-5", SequenceSettings.builder().start(5).build());
            assertEquals(List.of(5L, Long.MAX_VALUE), List.of(info.start(), info.max()), "max: the server's default");
            info = c.createSequence("plain");
            assertEquals(List.of(1L, Long.MAX_VALUE), List.of(info.start(), info.max()));
        }
    }

    @Test
    void snowflakeHandle_DeregistersOnClose() {
        try (TicketdClient c = client(a)) {
            SnowflakeRemote first = c.snowflake("ev");
            first.close();
            assertEquals(0, c.remoteHandles());
            assertThrows(ClosedException.class, first::next, "closed for every holder");
            SnowflakeRemote second = c.snowflake("ev");
            assertNotSame(first, second, "a closed handle is let go: the next call makes a new one");
            second.close();
            assertEquals(0, c.remoteHandles());
        }
    }

    @Test
    void dotSegmentNames_ArePercentEncoded() {
        backend.create(".", 1, Long.MAX_VALUE);
        backend.create("..", 1, Long.MAX_VALUE);
        backend.namespace("..");
        try (TicketdClient c = client(a)) {
            assertEquals(new Range(1, 5), c.reserve("..", 5));
            assertEquals("/v1/sequences/%2E%2E/ranges", a.lastRawPath);
            assertEquals(1, c.sequenceInfo(".").next().getAsLong());
            assertEquals("/v1/sequences/%2E", a.lastRawPath);
            c.snowflake("..").next();
            assertEquals("/v1/namespaces/%2E%2E/ids", a.lastRawPath);
        }
    }

    @Test
    void closed_CallsThrowClosed() {
        TicketdClient c = client(a);
        c.close();
        c.close(); // idempotent
        assertThrows(ClosedException.class, () -> c.reserve("orders", 1));
        assertThrows(ClosedException.class, () -> c.sequence("orders"));
    }

    @Test
    void https_WithACaFile(@TempDir Path dir) throws Exception {
        // A CA and a server certificate for 127.0.0.1, made by the openssl CLI.
        run(dir, "openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ca.key");
        run(dir, "openssl", "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=test-ca", "-days", "2", "-out", "ca.pem");
        run(dir, "openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "node.key");
        run(dir, "openssl", "req", "-new", "-key", "node.key", "-subj", "/CN=node", "-out", "node.csr");
        Files.writeString(dir.resolve("ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
        run(dir, "openssl", "x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "ext.cnf", "-out", "node.pem");
        StandIn tls = new StandIn(backend, "tls", 4, Pem.context(null, dir.resolve("node.pem"), dir.resolve("node.key")));
        try (tls; TicketdClient c = TicketdClient.builder().endpoints(tls.url()).caFile(dir.resolve("ca.pem")).build()) {
            assertEquals(new Range(1, 3), c.reserve("orders", 3));
        }
        // Without the CA the server is not trusted: a transport failure on every attempt.
        StandIn tls2 = new StandIn(backend, "tls", 4, Pem.context(null, dir.resolve("node.pem"), dir.resolve("node.key")));
        try (tls2; TicketdClient c = TicketdClient.builder().endpoints(tls2.url()).callTimeout(Duration.ofSeconds(3)).build()) {
            UnavailableException e = assertThrows(UnavailableException.class, () -> c.reserve("orders", 1));
            assertTrue(e.getMessage().contains("SSL") || e.getMessage().contains("PKIX") || e.getMessage().contains("certificat"), e.getMessage());
        }
        // Mutual TLS: a node that needs a client certificate signed by the CA.
        run(dir, "openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "client.key");
        run(dir, "openssl", "req", "-new", "-key", "client.key", "-subj", "/CN=client", "-out", "client.csr");
        run(dir, "openssl", "x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", "client.pem");
        StandIn mtls = new StandIn(backend, "mtls", 5, Pem.context(dir.resolve("ca.pem"), dir.resolve("node.pem"), dir.resolve("node.key")), true);
        try (mtls; TicketdClient c = TicketdClient.builder().endpoints(mtls.url()).caFile(dir.resolve("ca.pem"))
            .clientCertificate(dir.resolve("client.pem"), dir.resolve("client.key")).build();
             TicketdClient anonymous = TicketdClient.builder().endpoints(mtls.url()).caFile(dir.resolve("ca.pem"))
                 .callTimeout(Duration.ofSeconds(2)).build()) {
            assertEquals(new Range(4, 5), c.reserve("orders", 2), "an RSA PKCS#8 client key, accepted");
            assertThrows(UnavailableException.class, () -> anonymous.reserve("orders", 1), "no client certificate: refused");
        }
        // PKCS#1 keys are refused with a way out.
        Files.writeString(dir.resolve("rsa1.pem"), "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        Exception e = assertThrows(Exception.class, () -> Pem.privateKey(dir.resolve("rsa1.pem")));
        assertTrue(e.getMessage().contains("openssl pkcs8"), e.getMessage());
    }

    static void run(Path dir, String... cmd) throws Exception {
        Process p = new ProcessBuilder(List.of(cmd)).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), String.join(" ", cmd) + ": " + out);
    }
}
