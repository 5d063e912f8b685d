package io.ticketd.client;

/** 401: no bearer token, or one the cluster does not know. Final. */
public class UnauthorizedException extends TicketdException {
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
    public UnauthorizedException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    UnauthorizedException(String message) {
        this(message, 0, "", "", "", null);
    }

    UnauthorizedException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }

    @Override
    UnauthorizedException forCaller() {
        return new UnauthorizedException(getMessage(), status(), problemType(), detail(), endpoint(), this);
    }
}
