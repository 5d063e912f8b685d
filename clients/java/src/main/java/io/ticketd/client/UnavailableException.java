package io.ticketd.client;

/** Nothing could be had within the call's bound: every endpoint down, no leader, 503/429/5xx answers, timeouts. The cause is the last failure. The only error worth retrying later; a sequence handle's background refill goes on retrying by itself. */
public class UnavailableException extends TicketdException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception of this kind, as the client makes it from an answer (public for tests and for
     * code that wraps the client).
     *
     * @param message the message
     * @param status the HTTP status of the answer, 0 if there is none
     * @param problemType the answer's problem type; null is ""
     * @param detail the problem's detail; null is ""
     * @param endpoint the endpoint that answered; null is ""
     * @param cause the cause, or null
     */
    public UnavailableException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    UnavailableException(String message) {
        this(message, 0, "", "", "", null);
    }

    UnavailableException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }

    @Override
    UnavailableException forCaller() {
        return new UnavailableException(getMessage(), status(), problemType(), detail(), endpoint(), this);
    }
}
