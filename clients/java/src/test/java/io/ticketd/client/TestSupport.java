package io.ticketd.client;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/** The tests' one polling helper and one way to start a virtual thread where the JDK has them. */
final class TestSupport {
    private TestSupport() {}

    /** Polls cond every 5 ms for up to timeout; fails with what if it never holds. */
    static void eventually(Duration timeout, BooleanSupplier cond, String what) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) throw new AssertionError("not within " + timeout + ": " + what);
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
    }

    /** True when the running JDK has virtual threads (21+). Debian 12's JDK is 17: then false. */
    static boolean hasVirtualThreads() {
        return START_VIRTUAL != null;
    }

    private static final Method START_VIRTUAL = lookup();

    private static Method lookup() {
        try {
            return Thread.class.getMethod("startVirtualThread", Runnable.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** Starts r on a virtual thread when the JDK has them, else on a platform thread named name. */
    static Thread start(boolean virtual, String name, Runnable r) {
        if (virtual && START_VIRTUAL != null) {
            try {
                return (Thread) START_VIRTUAL.invoke(null, r);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
        Thread t = new Thread(r, name);
        t.start();
        return t;
    }

    /** Live threads whose name starts with "ticketd-" (the library names every thread it starts so). */
    static long ticketdThreads() {
        return Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.isAlive() && t.getName().startsWith("ticketd-")).count();
    }
}
