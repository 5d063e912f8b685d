package io.ticketd.client;

/**
 * A call on a client (or one of its handles) after close(). An {@link IllegalStateException}, as
 * Java's idiom has it for a call on a closed object; not sent, so there is no answer behind it.
 */
public class ClosedException extends IllegalStateException implements TicketdFailure {
    private static final long serialVersionUID = 1L;

    public ClosedException(String message) {
        super(message);
    }

    public ClosedException(String message, Throwable cause) {
        super(message, cause);
    }

    @Override public int status() { return 0; }

    @Override public String problemType() { return ""; }

    @Override public String detail() { return ""; }

    @Override public String endpoint() { return ""; }
}
