package io.ticketd.client;

import java.util.Map;

/**
 * Types a non-2xx answer from its RFC 9457 problem document's type, then its status: a
 * {@link TicketdException} of some kind, or an {@link InvalidArgumentException} (400, 413). A retried
 * status (429, 5xx) always gives a TicketdException.
 */
final class Problems {
    static final String PREFIX = "urn:ticketd:problem:";

    private Problems() {}

    static RuntimeException typed(TicketdClient.Answer a) {
        int status = a.status();
        String type = "";
        String title = "";
        String detail = "";
        long clockBehind = 0;
        try {
            Object doc = Json.parse(a.body());
            if (doc instanceof Map) {
                Map<String, Object> m = Json.object(doc, "problem");
                type = Json.optString(m, "type");
                title = Json.optString(m, "title");
                detail = Json.optString(m, "detail");
                Object cb = m.get("clock_behind_ms");
                if (cb instanceof Long) clockBehind = (Long) cb;
            }
        } catch (IllegalArgumentException e) {
            // not JSON (a proxy's page): keep the start of the body as the detail
            String b = a.body().strip();
            detail = b.length() > 200 ? b.substring(0, 200) + "..." : b;
        }
        String ep = a.endpoint().base();
        String msg = "ticketd: " + ep + " answered " + status + (title.isEmpty() ? "" : " " + title)
            + (type.isEmpty() ? "" : " (" + type + ")") + (detail.isEmpty() ? "" : ": " + detail);
        String kind = type.startsWith(PREFIX) ? type.substring(PREFIX.length()) : "";
        // The problem type first, then the status, as the Go and Python clients: a known type says
        // what happened whatever status carried it (clock-behind on a 429 is still clock-behind).
        switch (kind) {
            case "sequence-not-found":
            case "namespace-not-found":
            case "member-not-found":
                return new NotFoundException(msg, status, type, detail, ep, null);
            case "sequence-exhausted":
            case "timestamp-exhausted":
                return new ExhaustedException(msg, status, type, detail, ep, null);
            case "clock-behind":
                return new ClockBehindException(msg, status, type, detail, ep, null, clockBehind);
            default:
                break;
        }
        switch (status) {
            case 400:
            case 413:
                return new InvalidArgumentException(msg, status, type, detail, ep, null);
            case 401:
                return new UnauthorizedException(msg, status, type, detail, ep, null);
            case 403:
                return new ForbiddenException(msg, status, type, detail, ep, null);
            case 409:
                return new ConflictException(msg, status, type, detail, ep, null);
            default:
                if (TicketdClient.retryable(status)) return new UnavailableException(msg, status, type, detail, ep, null);
                return new TicketdException(msg, status, type, detail, ep, null);
        }
    }
}
