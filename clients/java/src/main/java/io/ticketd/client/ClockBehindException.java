package io.ticketd.client;

/**
 * 503 clock-behind: the answering node's wall clock is behind timestamps its Snowflake generator must
 * stay above. That node only; another node may serve. A kind of {@link UnavailableException}.
 */
public class ClockBehindException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    private final long behindMillis;

    public ClockBehindException(String message, int status, String problemType, String detail, String endpoint,
                                Throwable cause, long behindMillis) {
        super(message, status, problemType, detail, endpoint, cause);
        this.behindMillis = behindMillis;
    }

    /** How far the node's clock was behind ({@code clock_behind_ms}), 0 if it did not say. */
    public long behindMillis() { return behindMillis; }

    @Override
    ClockBehindException forCaller() {
        return new ClockBehindException(getMessage(), status(), problemType(), detail(), endpoint(), this, behindMillis);
    }
}
