package io.ticketd.client;

/**
 * Bad input: refused by the client before sending (bad name, count, option; status 0) or by the
 * server (400, 413, with the answer's status, problem type, detail and endpoint). An
 * {@link IllegalArgumentException}, as Java's idiom has it. Final: not retried.
 */
public class InvalidArgumentException extends IllegalArgumentException implements TicketdFailure {
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
    public InvalidArgumentException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.problemType = problemType == null ? "" : problemType;
        this.detail = detail == null ? "" : detail;
        this.endpoint = endpoint == null ? "" : endpoint;
    }

    /**
     * A bad argument refused before sending.
     *
     * @param message what is wrong
     */
    public InvalidArgumentException(String message) {
        this(message, 0, "", "", "", null);
    }

    /**
     * A bad argument refused before sending, with what found it wrong.
     *
     * @param message what is wrong
     * @param cause the cause, or null
     */
    public InvalidArgumentException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }

    @Override public int status() { return status; }

    @Override public String problemType() { return problemType; }

    @Override public String detail() { return detail; }

    @Override public String endpoint() { return endpoint; }

    /** A new one, the same but for its cause, this: see {@link ForCaller}. */
    InvalidArgumentException forCaller() {
        return new InvalidArgumentException(getMessage(), status, problemType, detail, endpoint, this);
    }
}
