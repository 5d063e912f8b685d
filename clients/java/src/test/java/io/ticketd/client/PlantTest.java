package io.ticketd.client;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The planted bug range-twice-after-retry gives a duplicate; without it, the same run gives none. */
class PlantTest {
    @AfterEach
    void off() {
        Plants.rangeTwiceAfterRetry = false;
    }

    /** Takes 5,000 IDs while the first reservation fails once; reports whether an ID came twice. */
    static boolean duplicateAfterARetriedReservation() throws Exception {
        StandIn.Backend backend = new StandIn.Backend();
        backend.create("orders", 1, Long.MAX_VALUE);
        try (StandIn a = new StandIn(backend, "a", 1);
             TicketdClient c = TicketdClient.builder().endpoints(a.url()).callTimeout(Duration.ofSeconds(5))
                 .backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build()) {
            a.fail(1, 503, "unavailable", -1);
            TicketdSequence s = c.sequence("orders");
            Set<Long> seen = new HashSet<>();
            boolean dup = false;
            for (int i = 0; i < 5000; i++) dup |= !seen.add(s.next());
            return dup;
        }
    }

    @Test
    void withoutThePlant_NoDuplicate() throws Exception {
        assertFalse(duplicateAfterARetriedReservation());
    }

    @Test
    void rangeTwiceAfterRetry_GivesADuplicate() throws Exception {
        Plants.rangeTwiceAfterRetry = true;
        assertTrue(duplicateAfterARetriedReservation());
    }
}
