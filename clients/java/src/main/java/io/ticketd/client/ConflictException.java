package io.ticketd.client;

/** 409 other than exhaustion (conflict, worker-unavailable, cluster-upgrading, lease-lost). */
public class ConflictException extends TicketdException {
    private static final long serialVersionUID = 1L;

    public ConflictException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    ConflictException(String message) {
        this(message, 0, "", "", "", null);
    }

    ConflictException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }

    @Override
    ConflictException forCaller() {
        return new ConflictException(getMessage(), status(), problemType(), detail(), endpoint(), this);
    }
}
