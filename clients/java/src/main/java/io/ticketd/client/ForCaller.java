package io.ticketd.client;

/**
 * One failure of a background refill or fetch, thrown to each of the callers waiting on it: each
 * gets a new exception of the same kind with the background one as its cause. Throwing the one
 * object in many threads would give them one shared stack trace, the background thread's, which
 * shows none of the caller's frames (and a {@code Throwable} is not meant to be thrown by two
 * threads at once: suppressed exceptions added by one show up in the other's).
 */
final class ForCaller {
    private ForCaller() {}

    /** A copy of e, the library's failure, for one caller; e itself is its cause. */
    static RuntimeException copy(RuntimeException e) {
        if (e instanceof TicketdException) return ((TicketdException) e).forCaller();
        if (e instanceof ClosedException) return new ClosedException(e.getMessage(), e);
        if (e instanceof InvalidArgumentException) return ((InvalidArgumentException) e).forCaller();
        // Not the library's (never kept as a background failure: they are wrapped first).
        return new TicketdException(String.valueOf(e.getMessage()), 0, "", "", "", e);
    }
}
