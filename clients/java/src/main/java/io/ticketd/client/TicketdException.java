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

    private final int status;
    private final String problemType;
    private final String detail;
    private final String endpoint;

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
