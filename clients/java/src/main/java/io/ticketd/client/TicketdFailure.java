package io.ticketd.client;

/**
 * What every exception this library throws implements: one {@code instanceof} test for "is it
 * ticketd's". Java has one superclass per exception, and the idiom wants a call on a closed client
 * to be an {@link IllegalStateException} ({@link ClosedException}) and a bad argument an
 * {@link IllegalArgumentException} ({@link InvalidArgumentException}); every other kind extends
 * {@link TicketdException}. This interface is what the three have in common.
 *
 * <p>An answer of a server carries its HTTP status, the RFC 9457 problem type
 * ({@code urn:ticketd:problem:…}) and detail, and the endpoint that answered; an error made by the
 * client itself (bad argument, closed, timed out) has status 0.
 */
public interface TicketdFailure {
    /** {@return the HTTP status of the answer, or 0 when no answer is behind this error} */
    int status();

    /** {@return the problem type, such as {@code urn:ticketd:problem:sequence-exhausted}, or ""} */
    String problemType();

    /** {@return the problem's detail, or ""} */
    String detail();

    /** {@return the endpoint that answered ({@code http://host:port}), or ""} */
    String endpoint();
}
