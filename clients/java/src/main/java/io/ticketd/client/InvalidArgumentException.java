package io.ticketd.client;

/**
 * Bad input: refused by the client before sending (bad name, count, option; status 0) or by the
 * server (400, 413, with the answer's status, problem type, detail and endpoint). An
 * {@link IllegalArgumentException}, as Java's idiom has it. Final: not retried.
 */
public class InvalidArgumentException extends IllegalArgumentException implements TicketdFailure {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String problemType;
    private final String detail;
    private final String endpoint;

    public InvalidArgumentException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.problemType = problemType == null ? "" : problemType;
        this.detail = detail == null ? "" : detail;
        this.endpoint = endpoint == null ? "" : endpoint;
    }

    public InvalidArgumentException(String message) {
        this(message, 0, "", "", "", null);
    }

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
