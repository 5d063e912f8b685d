package io.ticketd.client;

/**
 * Base of the errors of the cluster and of the network: every kind but {@link ClosedException} (an
 * {@link IllegalStateException}) and {@link InvalidArgumentException} (an
 * {@link IllegalArgumentException}); all of them implement {@link TicketdFailure}. Unchecked, so that
 * {@code next()} reads as a plain call; catch the subclasses to decide ({@link UnavailableException}
 * is the one worth retrying later). Thrown as this base class only for answers no subclass
 * describes (a 405, a 404 of an unknown route, a body that is not the expected JSON).
 */
public class TicketdException extends RuntimeException implements TicketdFailure {
    private static final long serialVersionUID = 1L;

    /** The HTTP status of the answer, 0 if none (serialized form). */
    private final int status;
    /** The answer's problem type, or "". */
    private final String problemType;
    /** The problem's detail, or "". */
    private final String detail;
    /** The endpoint that answered, or "". */
    private final String endpoint;

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
    public TicketdException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.problemType = problemType == null ? "" : problemType;
        this.detail = detail == null ? "" : detail;
        this.endpoint = endpoint == null ? "" : endpoint;
    }

    TicketdException(String message) {
        this(message, 0, "", "", "", null);
    }

    @Override public int status() { return status; }

    @Override public String problemType() { return problemType; }

    @Override public String detail() { return detail; }

    @Override public String endpoint() { return endpoint; }

    /**
     * A new exception of this kind, the same but for its cause, this (see {@link ForCaller}). Each
     * subclass makes its own kind.
     */
    TicketdException forCaller() {
        return new TicketdException(getMessage(), status, problemType, detail, endpoint, this);
    }
}
