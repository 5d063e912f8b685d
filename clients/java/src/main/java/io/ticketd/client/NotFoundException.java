package io.ticketd.client;

/** 404: the sequence, namespace or member does not exist (sequence-not-found, namespace-not-found, member-not-found). Final: not retried. */
public class NotFoundException extends TicketdException {
    private static final long serialVersionUID = 1L;

    public NotFoundException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    NotFoundException(String message) {
        this(message, 0, "", "", "", null);
    }

    NotFoundException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }

    @Override
    NotFoundException forCaller() {
        return new NotFoundException(getMessage(), status(), problemType(), detail(), endpoint(), this);
    }
}
