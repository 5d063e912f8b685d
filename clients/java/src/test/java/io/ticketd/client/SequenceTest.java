package io.ticketd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class SequenceTest {
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

    TicketdClient client(Duration callTimeout) {
        return TicketdClient.builder().endpoints(a.url(), b.url()).callTimeout(callTimeout)
            .attemptTimeout(Duration.ofMillis(300)).backoff(Duration.ofMillis(5), Duration.ofMillis(40)).build();
    }

    @Test
    void doubleBuffer_OneRangeFetchedAhead_NoWaitWhileCached() {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            TicketdSequence s = c.sequence("orders");
            assertEquals(1, s.next()); // the only wait: the cache starts empty
            // The first range's low-water mark is its first ID (rate unknown): the next range is
            // fetched ahead at once, and only that one.
            TestSupport.eventually(Duration.ofSeconds(5), () -> s.stats().refills() == 2 && !s.stats().refilling(), "one range fetched ahead");
            assertEquals(2, backend.reservations.get());
            // The first caller waited, so the range fetched ahead is twice the first (the Go SDK's rule).
            assertEquals(List.of(1000L, 2000L), backend.counts);
            assertEquals(999 + 2000, s.stats().cached());
            for (long want = 2; want <= 3000; want++) assertEquals(want, s.next());
            TicketdSequence.Stats st = s.stats();
            assertEquals(1, st.waits(), "crossing into the range fetched ahead does not wait");
            assertEquals(0, st.waitsWhileCached());
            TestSupport.eventually(Duration.ofSeconds(5), () -> s.stats().refills() == 3, "the next refill started on the swap");
            assertTrue(backend.reservations.get() <= 3, "one refill in flight at most");
        }
    }

    @Test
    void rangeSize_FollowsTheRate() {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            TicketdSequence s = c.sequence("orders");
            long t0 = System.nanoTime();
            long last = 0;
            while (System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(300)) {
                for (Range r : s.nextN(100)) {
                    assertTrue(r.first() > last);
                    last = r.last();
                }
            }
            TicketdSequence.Stats st = s.stats();
            assertTrue(st.rate() > 10_000, "rate " + st.rate());
            long maxAsked = backend.counts.stream().mapToLong(Long::longValue).max().orElse(0);
            assertTrue(maxAsked > 100_000, "sizes asked " + backend.counts + " follow the rate " + st.rate());
            assertTrue(maxAsked <= 10_000_000, "within the bounds");
            assertEquals(0, st.waitsWhileCached());
        }
    }

    @Test
    void options_BoundTheRangeSizes() {
        SequenceOptions small = SequenceOptions.builder().coverage(Duration.ofSeconds(1)).minRange(50).maxRange(80).build();
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            TicketdSequence s = c.sequence("orders", small);
            assertEquals(small, s.options());
            for (int i = 0; i < 2000; i++) s.next();
            assertEquals(50L, backend.counts.get(0), "the first range: minRange");
            assertTrue(backend.counts.stream().allMatch(n -> n >= 50 && n <= 80), "within minRange..maxRange: " + backend.counts);
        }
    }

    @Test
    void failedRefill_KeepsRetryingInTheBackground_LoggedOncePerStreak() {
        try (LogCapture log = new LogCapture(); TicketdClient c = client(Duration.ofSeconds(10))) {
            TicketdSequence s = c.sequence("orders");
            assertEquals(1, s.next());
            TestSupport.eventually(Duration.ofSeconds(5), () -> s.stats().refills() == 2, "prefetch");
            a.always = new StandIn.Fault(503, "unavailable", -1, null);
            b.always = a.always;
            long cached = s.stats().cached();
            for (long i = 0; i < cached; i++) s.next(); // swaps in range 2: its refill starts and fails
            TestSupport.eventually(Duration.ofSeconds(5), () -> a.requests.get() + b.requests.get() > 10, "retries");
            assertTrue(s.stats().refilling(), "still refilling after failures");
            assertEquals(1, log.at(Level.WARNING).size(), "one WARNING for the streak, not one per retry: " + log.at(Level.WARNING));
            assertTrue(log.at(Level.WARNING).get(0).contains("refilling sequence \"orders\" in the background failed, retrying"), log.at(Level.WARNING).get(0));
            assertTrue(log.at(Level.FINE).size() >= 5, "each further failure at DEBUG: " + log.at(Level.FINE).size());
            assertEquals(List.of(), log.at(Level.INFO));
            a.always = null;
            b.always = null;
            TestSupport.eventually(Duration.ofSeconds(5), () -> s.stats().refills() == 3, "the refill recovered by itself");
            assertEquals(cached + 2, s.next());
            TestSupport.eventually(Duration.ofSeconds(5), () -> log.at(Level.INFO).size() == 1, "recovery logged at INFO");
            assertTrue(log.at(Level.INFO).get(0).contains("succeeds again, after"), log.at(Level.INFO).get(0));
            assertEquals(1, log.at(Level.WARNING).size());
        }
    }

    /**
     * The case: the cluster's token rotates; the background refill's 401 is logged (a
     * WARNING, once, before any caller runs dry), callers get UnauthorizedException once the cache
     * is empty, and when the application's token supplier follows, the refill recovers (INFO).
     */
    @Test
    void tokenRotation_RefillsFailingWith401_WarnedOnce_RecoveredWithTheSupplier() {
        backend.token = "one";
        AtomicReference<String> token = new AtomicReference<>("one");
        try (LogCapture log = new LogCapture();
             TicketdClient c = TicketdClient.builder().endpoints(a.url(), b.url()).bearerToken(token::get)
                 .callTimeout(Duration.ofSeconds(5)).backoff(Duration.ofMillis(5), Duration.ofMillis(40)).build()) {
            TicketdSequence s = c.sequence("orders");
            assertEquals(1, s.next());
            TestSupport.eventually(Duration.ofSeconds(5), () -> s.stats().refills() == 2, "prefetch");
            backend.token = "two";
            long cached = s.stats().cached();
            for (long i = 0; i < cached; i++) s.next(); // swaps in range 2: its refill gets a 401
            TestSupport.eventually(Duration.ofSeconds(5), () -> log.at(Level.WARNING).size() == 1, "the 401 logged while IDs were cached");
            assertTrue(log.at(Level.WARNING).get(0).contains("401"), log.at(Level.WARNING).get(0));
            assertThrows(UnauthorizedException.class, s::next); // dry: a new refill, another 401
            assertThrows(UnauthorizedException.class, s::next);
            assertEquals(1, log.at(Level.WARNING).size(), "one WARNING for the streak");
            token.set("two");
            assertEquals(cached + 2, s.next());
            TestSupport.eventually(Duration.ofSeconds(5), () -> log.at(Level.INFO).size() == 1, "recovery logged");
            assertTrue(log.at(Level.INFO).get(0).contains("after 3 failures"), log.at(Level.INFO).get(0));
        }
    }

    @Test
    void emptyCache_WaitsAtMostTheCallTimeout_ThenUnavailable_ThenRecovers() {
        a.always = new StandIn.Fault(503, "unavailable", -1, null);
        b.always = a.always;
        try (TicketdClient c = client(Duration.ofMillis(400))) {
            TicketdSequence s = c.sequence("orders");
            long t0 = System.nanoTime();
            UnavailableException e = assertThrows(UnavailableException.class, s::next);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 380 && ms < 1400, "waited " + ms + " ms, call timeout 400 ms");
            assertEquals(503, e.status(), "carries the last failure");
            a.always = null;
            b.always = null;
            TestSupport.eventually(Duration.ofSeconds(5), () -> s.stats().refills() >= 1, "recovered");
            assertEquals(1, s.next());
        }
    }

    @Test
    void refusesARangeNotAboveTheLastHeld() {
        try (TicketdClient c = client(Duration.ofMillis(500))) {
            TicketdSequence s = c.sequence("orders");
            s.next();
            TestSupport.eventually(Duration.ofSeconds(5), () -> s.stats().refills() == 2, "prefetch");
            backend.rewind = true; // every range from 1 again: a broken cluster
            Set<Long> seen = new HashSet<>();
            seen.add(1L);
            long cached = s.stats().cached();
            for (long i = 0; i < cached; i++) assertTrue(seen.add(s.next()));
            TicketdException e = assertThrows(TicketdException.class, s::next);
            assertTrue(e.getMessage().contains("not above"), e.getMessage());
        }
    }

    @Test
    void exhaustion_ServesEveryIdThenExhausted() {
        backend.create("small", 1, 2500);
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            TicketdSequence s = c.sequence("small");
            long got = 0;
            long last = 0;
            while (true) {
                try {
                    for (Range r : s.nextN(7)) {
                        assertTrue(r.first() > last);
                        last = r.last();
                        got += r.size();
                    }
                } catch (ExhaustedException e) {
                    break;
                }
            }
            assertTrue(got >= 2500 - 7 && last <= 2500, "served " + got + " IDs up to " + last);
            ExhaustedException e1 = assertThrows(ExhaustedException.class, s::next);
            ExhaustedException e2 = assertThrows(ExhaustedException.class, s::next);
            assertNotSame(e1, e2, "the final failure, kept: a new exception for each call");
            assertSame(e1.getCause(), e2.getCause());
        }
    }

    @Test
    void notFound_IsFinal() {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            TicketdSequence s = c.sequence("nope");
            assertThrows(NotFoundException.class, s::next);
        }
    }

    @Test
    void manyThreads_VirtualAndPlatform_NoDuplicate_IncreasingPerThread() throws Exception {
        int threads = 16;
        int each = 20_000;
        try (TicketdClient c = client(Duration.ofSeconds(10))) {
            TicketdSequence s = c.sequence("orders");
            List<long[]> results = new ArrayList<>();
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long[] out = new long[each];
                results.add(out);
                boolean virtual = t % 2 == 1;
                ts.add(TestSupport.start(virtual, "worker-" + t, () -> {
                    try {
                        for (int i = 0; i < each; i++) {
                            if (i % 100 == 0) {
                                List<Range> rs = s.nextN(3);
                                out[i] = rs.get(0).first(); // one of the three; the others are checked below
                            } else {
                                out[i] = s.next();
                            }
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }));
            }
            for (Thread t : ts) t.join();
            assertTrue(errors.isEmpty(), "errors: " + errors);
            Set<Long> all = new HashSet<>();
            for (long[] out : results) {
                for (int i = 0; i < out.length; i++) {
                    assertTrue(all.add(out[i]), "duplicate " + out[i]);
                    if (i > 0) assertTrue(out[i] > out[i - 1], "not increasing within a thread");
                }
            }
            assertEquals(0, s.stats().waitsWhileCached());
        }
    }

    @Test
    void errorInARefill_IsReportedToTheWaiter_AndTheNextRefillRuns() {
        AtomicInteger calls = new AtomicInteger();
        Faults.beforeBackgroundCall = () -> {
            if (calls.getAndIncrement() == 0) throw new StackOverflowError("injected");
        };
        try (TicketdClient c = client(Duration.ofMillis(500))) {
            TicketdSequence s = c.sequence("orders");
            TicketdException e = assertThrows(TicketdException.class, s::next);
            // The caller's own exception, caused by the background one, caused by the Error.
            assertInstanceOf(StackOverflowError.class, e.getCause().getCause(), e.toString());
            assertEquals(1, s.next(), "a new refill runs");
        } finally {
            Faults.beforeBackgroundCall = null;
        }
    }

    /**
     * Callers waiting on one refill that fails each get an exception of their own, of the refill's
     * kind, with the refill's as its cause: one object thrown in many threads would share (and keep
     * growing) one stack trace, which shows the refill's thread and not the caller's frames.
     */
    @Test
    void waitersOnOneFailedRefill_EachGetTheirOwnException_CausedByTheRefills() throws Exception {
        backend.token = "rotated"; // the client sends none: 401, a final answer
        a.delayMillis = 200; // so that both callers wait on the one refill
        b.delayMillis = 200;
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url(), b.url()).attemptTimeout(Duration.ofSeconds(3)).build()) {
            TicketdSequence s = c.sequence("orders");
            List<Throwable> got = TestSupport.callConcurrently(2, s::next);
            assertEquals(1, a.requests.get() + b.requests.get(), "one refill, one request");
            TicketdException e1 = assertInstanceOf(UnauthorizedException.class, got.get(0));
            TicketdException e2 = assertInstanceOf(UnauthorizedException.class, got.get(1));
            assertNotSame(e1, e2, "each caller its own exception");
            assertSame(e1.getCause(), e2.getCause(), "both caused by the refill's");
            assertInstanceOf(UnauthorizedException.class, e1.getCause());
            assertEquals(401, e1.status());
            assertTrue(TestSupport.hasFrame(e1, "TicketdSequence", "next"), "the caller's frames");
            assertTrue(TestSupport.hasFrame(e1.getCause(), "TicketdSequence", "runRefill"), "the refill's frames in the cause");
        }
    }

    @Test
    void close_StopsTheRefillAndLeavesNoThread() {
        a.always = new StandIn.Fault(503, "unavailable", -1, null);
        b.always = a.always;
        TicketdClient c = client(Duration.ofMillis(200));
        TicketdSequence s = c.sequence("orders");
        assertThrows(UnavailableException.class, s::next);
        assertTrue(c.backgroundThreads() > 0, "the refill retries in the background");
        c.close();
        assertEquals(0, c.backgroundThreads());
        assertEquals(0, TestSupport.ticketdThreads());
        assertThrows(ClosedException.class, s::next);
        assertThrows(ClosedException.class, () -> s.nextN(2));
    }

    @Test
    void sizer_FollowsTheGoSdk() {
        TicketdSequence.Sizer z = new TicketdSequence.Sizer(10, 1000, 10_000_000);
        assertEquals(1000, z.size(false, 0), "rate unknown: the minimum");
        assertEquals(0, z.lowWater());
        z.observe(0, 0);
        z.observe(50_000, TimeUnit.SECONDS.toNanos(1));
        assertEquals(50_000, z.rate, 1e-9);
        assertEquals(500_000, z.size(false, 1000));
        assertEquals(500_000, z.lowWater());
        z.observe(50_000, TimeUnit.SECONDS.toNanos(2)); // nothing handed out: falls by half at most
        assertEquals(25_000, z.rate, 1e-9);
        assertEquals(1_000_000, z.size(true, 500_000), "a caller waited: at least twice the last");
        assertEquals(10_000_000, z.size(true, 9_000_000), "within the maximum");
    }
}
