package io.ticketd.client;

/**
 * Base of every error the client throws. Unchecked, so that {@code next()} reads as a plain call;
 * catch the subclasses to decide ({@link UnavailableException} is the one worth retrying later).
 * A server's answer carries its HTTP status, the RFC 9457 problem type
 * ({@code urn:ticketd:problem:…}) and detail, and the endpoint that answered; an error made by the
 * client itself (bad argument, closed, timed out) has status 0 and the endpoint of the last failure,
 * if any. Thrown as this base class only for answers no subclass describes (a 405, a 404 of an
 * unknown route, a body that is not the expected JSON).
 */
public class TicketdException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String problemType;
    private final String detail;
    private final String endpoint;

    public TicketdException(String message, int status, String problemType, String detail, String endpoint, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.problemType = problemType == null ? "" : problemType;
        this.detail = detail == null ? "" : detail;
        this.endpoint = endpoint == null ? "" : endpoint;
    }

    TicketdException(String message) {
        this(message, 0, "", "", "", null);
    }

    /** The HTTP status of the answer, or 0 when no answer is behind this error. */
    public int status() { return status; }

    /** The problem type, such as {@code urn:ticketd:problem:sequence-exhausted}, or "". */
    public String problemType() { return problemType; }

    /** The problem's detail, or "". */
    public String detail() { return detail; }

    /** The endpoint that answered ({@code http://host:port}), or "". */
    public String endpoint() { return endpoint; }
}
