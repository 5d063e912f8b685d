package io.ticketd.client;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * What the library logs, caught from java.util.logging, where System.getLogger sends it by default
 * (System.Logger's WARNING, INFO, DEBUG are JUL's WARNING, INFO, FINE). Keeps the records from the
 * console while it is open.
 */
final class LogCapture extends Handler implements AutoCloseable {
    private final Logger logger = Logger.getLogger("io.ticketd.client");
    private final Level oldLevel = logger.getLevel();
    private final boolean oldParents = logger.getUseParentHandlers();
    final List<LogRecord> records = new CopyOnWriteArrayList<>();

    LogCapture() {
        setLevel(Level.ALL);
        logger.setLevel(Level.ALL);
        logger.setUseParentHandlers(false);
        logger.addHandler(this);
    }

    /** The messages logged at level, in order. */
    List<String> at(Level level) {
        return records.stream().filter(r -> r.getLevel().equals(level)).map(LogRecord::getMessage).collect(Collectors.toList());
    }

    @Override public void publish(LogRecord r) { records.add(r); }

    @Override public void flush() {}

    @Override
    public void close() {
        logger.removeHandler(this);
        logger.setLevel(oldLevel);
        logger.setUseParentHandlers(oldParents);
    }
}
