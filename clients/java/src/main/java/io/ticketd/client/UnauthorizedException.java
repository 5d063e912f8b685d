package io.ticketd.client;

/** 401: no bearer token, or one the cluster does not know. Final. */
public class UnauthorizedException extends TicketdException {
    private static final long serialVersionUID = 1L;

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
