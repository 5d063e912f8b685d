package io.ticketd.client;

/** 404: the sequence, namespace or member does not exist (sequence-not-found, namespace-not-found, member-not-found). Final: not retried. */
public class NotFoundException extends TicketdException {
    private static final long serialVersionUID = 1L;

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
