package io.ticketd.client;

/** Bad input: refused by the client before sending (bad name, count, option) or by the server (400, 413). */
public class InvalidArgumentException extends TicketdException {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, status, problemType, detail, endpoint, cause);
    }

    InvalidArgumentException(String message) {
        this(message, 0, "", "", "", null);
    }

    InvalidArgumentException(String message, Throwable cause) {
        this(message, 0, "", "", "", cause);
    }
}
