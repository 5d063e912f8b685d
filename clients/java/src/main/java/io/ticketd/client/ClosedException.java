package io.ticketd.client;

/** A call on a client (or one of its handles) after close(). */
public class ClosedException extends TicketdException {
    private static final long serialVersionUID = 1L;

    public ClosedException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    ClosedException(String message) {
        this(message, 0, "", "", "", null);
    }

    ClosedException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }
}
