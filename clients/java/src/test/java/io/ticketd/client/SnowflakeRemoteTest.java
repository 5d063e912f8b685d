package io.ticketd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class SnowflakeRemoteTest {
    StandIn.Backend backend;
    StandIn a;
    StandIn b;

    @BeforeEach
    void up() throws Exception {
        backend = new StandIn.Backend();
        backend.namespace("ev");
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
    void nextAndNextN_UniqueAndIncreasingWithinABatch_PrefetchAtHalf() {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            SnowflakeRemote r = c.snowflake("ev", SnowflakeOptions.builder().batch(100).build());
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < 51; i++) assertTrue(seen.add(r.next())); // crosses the low-water mark, 50 left
            TestSupport.eventually(Duration.ofSeconds(5), () -> r.stats().cached() == 49 + 100, "the next batch fetched ahead");
            assertEquals(1, r.stats().waits(), "only the first call waited");
            for (int i = 0; i < 1000; i++) assertTrue(seen.add(r.next()));
            for (int i = 0; i < 20; i++) {
                long[] ids = r.nextN(37);
                assertEquals(37, ids.length);
                for (long id : ids) assertTrue(seen.add(id), "duplicate " + id);
            }
            assertEquals(0, r.stats().failures());
        }
    }

    /**
     * A Snowflake ID's timestamp is when a node made it: a batch kept for hours would hand out
     * hours-old timestamps. Past maxAge (from its request, on the monotonic clock) what is left of
     * the current batch, and the batch fetched ahead, are dropped and a fresh batch fetched.
     */
    @Test
    void batchesOlderThanMaxAge_AreDropped_AFreshOneFetched() throws Exception {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            SnowflakeRemote r = c.snowflake("ev", SnowflakeOptions.builder().batch(10).lowWater(0).maxAge(Duration.ofMillis(300)).build());
            long first = r.next();
            long second = r.next();
            assertEquals((first >> 10) + 1, second >> 10, "within maxAge: the same batch");
            Thread.sleep(400);
            long third = r.next();
            assertEquals(2, a.snowflakeRequests.get() + b.snowflakeRequests.get(), "past maxAge: a fresh batch fetched");
            assertEquals((first >> 10) + 10, third >> 10, "the first ID of the next batch the cluster made");
            assertEquals(8, r.stats().expired(), "the 8 IDs left of the old batch dropped");

            // The batch fetched ahead ages too: lowWater 10 fetches the next batch at once.
            backend.namespace("ahead");
            SnowflakeRemote ahead = c.snowflake("ahead", SnowflakeOptions.builder().batch(10).lowWater(10).maxAge(Duration.ofMillis(300)).build());
            ahead.next();
            TestSupport.eventually(Duration.ofSeconds(5), () -> ahead.stats().cached() == 19, "a batch fetched ahead");
            Thread.sleep(400);
            ahead.next();
            assertEquals(9 + 10, ahead.stats().expired(), "both batches dropped");
        }
    }

    @Test
    void clockBehind_SkipsThatNodeForRetryAfter() {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            a.always = new StandIn.Fault(503, "clock-behind", 30, null);
            SnowflakeRemote r = c.snowflake("ev", SnowflakeOptions.builder().batch(10).lowWater(0).build());
            for (int i = 0; i < 200; i++) r.next();
            assertTrue(a.snowflakeRequests.get() <= 1, "a asked " + a.snowflakeRequests + " times within its Retry-After");
            assertTrue(b.snowflakeRequests.get() >= 20);
        }
    }

    @Test
    void clockBehindEverywhere_ClockBehindException_AnUnavailable() {
        a.always = new StandIn.Fault(503, "clock-behind", 1, null);
        b.always = a.always;
        try (TicketdClient c = client(Duration.ofMillis(400))) {
            SnowflakeRemote r = c.snowflake("ev");
            long t0 = System.nanoTime();
            UnavailableException e = assertThrows(ClockBehindException.class, r::next);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < 1400, "bounded: " + ms + " ms");
            assertEquals("urn:ticketd:problem:clock-behind", e.problemType());
        }
    }

    @Test
    void badAnswers_AreRefused_AndAnotherNodeAsked() {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            String[] rewrites = {"\"namespace\":\"ev\"", "\"namespace\":\"other\"",};
            a.snowflakeRewrite = body -> body.replace(rewrites[0], rewrites[1]);
            b.snowflakeRewrite = body -> body.replaceFirst("\\[(\\d+),", "[$1,$1,"); // a repeated ID, one too many
            try (TicketdClient quick = TicketdClient.builder().endpoints(a.url(), b.url()).callTimeout(Duration.ofMillis(300)).build()) {
                SnowflakeRemote q = quick.snowflake("ev", SnowflakeOptions.builder().batch(10).lowWater(0).build());
                assertThrows(UnavailableException.class, q::next, "no node gives a valid batch");
                assertTrue(q.stats().refused() >= 2, "refused " + q.stats().refused());
            }
            b.snowflakeRewrite = null;
            int aBefore = a.snowflakeRequests.get();
            SnowflakeRemote r = c.snowflake("ev", SnowflakeOptions.builder().batch(10).lowWater(0).build());
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < 30; i++) assertTrue(seen.add(r.next()));
            assertEquals(a.snowflakeRequests.get() - aBefore, r.stats().refused(), "every answer of a (wrong namespace) refused");
            assertEquals(3, r.stats().fetches(), "30 IDs in batches of 10, all from b");
        }
    }

    @Test
    void notFound_IsFinal() {
        try (TicketdClient c = client(Duration.ofSeconds(5))) {
            SnowflakeRemote r = c.snowflake("nope");
            assertThrows(NotFoundException.class, r::next);
            assertEquals(1, a.snowflakeRequests.get() + b.snowflakeRequests.get());
        }
    }

    @Test
    void errorInAFetch_IsReportedToTheWaiter_AndTheNextFetchRuns() {
        AtomicInteger calls = new AtomicInteger();
        Faults.beforeBackgroundCall = () -> {
            if (calls.getAndIncrement() == 0) throw new StackOverflowError("injected");
        };
        try (TicketdClient c = client(Duration.ofMillis(500))) {
            SnowflakeRemote r = c.snowflake("ev", SnowflakeOptions.builder().batch(10).build());
            TicketdException e = assertThrows(TicketdException.class, r::next);
            // The caller's own exception, caused by the background one, caused by the Error.
            assertInstanceOf(StackOverflowError.class, e.getCause().getCause(), e.toString());
            assertTrue(r.next() > 0, "a new fetch runs");
        } finally {
            Faults.beforeBackgroundCall = null;
        }
    }

    /** As the sequence's: callers waiting on one failed fetch each get their own exception. */
    @Test
    void waitersOnOneFailedFetch_EachGetTheirOwnException_CausedByTheFetchs() throws Exception {
        backend.token = "rotated"; // the client sends none: 401, a final answer
        a.delayMillis = 200; // so that both callers wait on the one fetch
        b.delayMillis = 200;
        try (TicketdClient c = TicketdClient.builder().endpoints(a.url(), b.url()).attemptTimeout(Duration.ofSeconds(3)).build()) {
            SnowflakeRemote r = c.snowflake("ev");
            List<Throwable> got = TestSupport.callConcurrently(2, r::next);
            assertEquals(1, a.requests.get() + b.requests.get(), "one fetch, one request");
            TicketdException e1 = assertInstanceOf(UnauthorizedException.class, got.get(0));
            TicketdException e2 = assertInstanceOf(UnauthorizedException.class, got.get(1));
            assertNotSame(e1, e2, "each caller its own exception");
            assertSame(e1.getCause(), e2.getCause(), "both caused by the fetch's");
            assertInstanceOf(UnauthorizedException.class, e1.getCause());
            assertTrue(TestSupport.hasFrame(e1, "SnowflakeRemote", "next"), "the caller's frames");
            assertTrue(TestSupport.hasFrame(e1.getCause(), "SnowflakeRemote", "runFetch"), "the fetch's frames in the cause");
        }
    }

    @Test
    void close_EndsTheFetchAndTheBuffer() {
        a.always = new StandIn.Fault(503, "no-worker-lease", -1, null);
        b.always = a.always;
        TicketdClient c = client(Duration.ofMillis(200));
        SnowflakeRemote r = c.snowflake("ev");
        assertThrows(UnavailableException.class, r::next);
        r.close();
        assertThrows(ClosedException.class, r::next);
        c.close();
        assertEquals(0, TestSupport.ticketdThreads());
    }
}
