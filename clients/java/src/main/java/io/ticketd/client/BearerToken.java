package io.ticketd.client;

import java.util.function.Supplier;

/**
 * The {@code Authorization} header of each request: none, a fixed token, or one asked of a
 * supplier on every request, so that a token rotated by the application (read from a file its
 * agent renews, a secret manager) is used from the next request on, retries included.
 */
final class BearerToken {
    private static final BearerToken NONE = new BearerToken(null, null);

    /** The fixed header, or null. */
    private final String fixed;
    /** The supplier asked per request, or null. */
    private final Supplier<String> supplier;

    private BearerToken(String fixed, Supplier<String> supplier) {
        this.fixed = fixed;
        this.supplier = supplier;
    }

    static BearerToken none() { return NONE; }

    /** A fixed token, checked now; null or "" is no token (TICKETD_TOKEN unset or empty). */
    static BearerToken fixed(String token) {
        if (token == null || token.isEmpty()) return NONE;
        return new BearerToken(header(token, "bearer token"), null);
    }

    /** A token asked of supplier on every request, checked each time. */
    static BearerToken supplied(Supplier<String> supplier) {
        if (supplier == null) throw new InvalidArgumentException("bearer token supplier is null; pass bearerToken((String) null) for no token");
        return new BearerToken(null, supplier);
    }

    /**
     * The header value for one request, or null for none. A supplier's null, blank or malformed
     * answer is an {@link InvalidArgumentException} naming what is wrong, and one that throws a
     * {@link TicketdException} with it as the cause. Nothing is sent then; the client fails that
     * attempt as a node that did not answer and retries (TicketdClient.attempt).
     */
    String header() {
        if (supplier == null) return fixed;
        String token;
        try {
            token = supplier.get();
        } catch (RuntimeException e) {
            throw new TicketdException("ticketd: the bearer token supplier threw " + e, 0, "", "", "", e);
        }
        if (token == null) throw new InvalidArgumentException("ticketd: the bearer token supplier returned null; it must return the token to send");
        if (token.isBlank()) throw new InvalidArgumentException("ticketd: the bearer token supplier returned a blank token (\"" + token + "\")");
        return header(token, "the bearer token supplier's token");
    }

    private static String header(String token, String what) {
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                throw new InvalidArgumentException(what + " has character U+" + String.format("%04X", (int) c) + " at " + i
                    + "; only visible ASCII is allowed");
            }
        }
        return "Bearer " + token;
    }
}
