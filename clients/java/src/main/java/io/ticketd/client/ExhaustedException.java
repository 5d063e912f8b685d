package io.ticketd.client;

/** 409 sequence-exhausted (or timestamp-exhausted for a Snowflake namespace): no more IDs. Final; a sequence handle keeps throwing it once its cache is empty. */
public class ExhaustedException extends TicketdException {
    private static final long serialVersionUID = 1L;

    public ExhaustedException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    ExhaustedException(String message) {
        this(message, 0, "", "", "", null);
    }

    ExhaustedException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }

    @Override
    ExhaustedException forCaller() {
        return new ExhaustedException(getMessage(), status(), problemType(), detail(), endpoint(), this);
    }
}
