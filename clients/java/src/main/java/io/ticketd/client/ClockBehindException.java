package io.ticketd.client;

/**
 * 503 clock-behind: the answering node's wall clock is behind timestamps its Snowflake generator must
 * stay above. That node only; another node may serve. A kind of {@link UnavailableException}.
 */
public class ClockBehindException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    /** How far the node's clock was behind, in milliseconds. */
    private final long behindMillis;

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
     * @param behindMillis how far the node's clock was behind, in milliseconds
     */
    public ClockBehindException(String message, int status, String problemType, String detail, String endpoint,
                                Throwable cause, long behindMillis) {
        super(message, status, problemType, detail, endpoint, cause);
        this.behindMillis = behindMillis;
    }

    /** {@return how far the node's clock was behind, in milliseconds ({@code clock_behind_ms}); 0 if it did not say} */
    public long behindMillis() { return behindMillis; }

    @Override
    ClockBehindException forCaller() {
        return new ClockBehindException(getMessage(), status(), problemType(), detail(), endpoint(), this, behindMillis);
    }
}
