package io.ticketd.client;

/**
 * A call on a client (or one of its handles) after close(). An {@link IllegalStateException}, as
 * Java's idiom has it for a call on a closed object; not sent, so there is no answer behind it.
 */
public class ClosedException extends IllegalStateException implements TicketdFailure {
    private static final long serialVersionUID = 1L;

    /**
     * A closed client's exception.
     *
     * @param message the message
     */
    public ClosedException(String message) {
        super(message);
    }

    /**
     * A closed client's exception, with the failure that was being retried when it closed.
     *
     * @param message the message
     * @param cause the cause, or null
     */
    public ClosedException(String message, Throwable cause) {
        super(message, cause);
    }

    /** {@return 0: nothing was sent} */
    @Override public int status() { return 0; }

    /** {@return "": nothing was sent} */
    @Override public String problemType() { return ""; }

    /** {@return "": nothing was sent} */
    @Override public String detail() { return ""; }

    /** {@return "": nothing was sent} */
    @Override public String endpoint() { return ""; }
}
