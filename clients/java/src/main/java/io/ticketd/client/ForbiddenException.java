package io.ticketd.client;

/** 403: the token lacks the scope the call needs. Final. */
public class ForbiddenException extends TicketdException {
    private static final long serialVersionUID = 1L;

    public ForbiddenException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    ForbiddenException(String message) {
        this(message, 0, "", "", "", null);
    }

    ForbiddenException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }

    @Override
    ForbiddenException forCaller() {
        return new ForbiddenException(getMessage(), status(), problemType(), detail(), endpoint(), this);
    }
}
