package io.ticketd.client;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
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

    /**
     * Runs call on n platform threads at once and returns what each threw, in thread order (a call
     * that returns is a failure: the tests using this expect every call to throw).
     */
    static List<Throwable> callConcurrently(int n, Runnable call) throws InterruptedException {
        Throwable[] got = new Throwable[n];
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int k = i;
            ts.add(start(false, "caller-" + i, () -> {
                try {
                    go.await();
                    call.run();
                    got[k] = new AssertionError("caller " + k + ": the call returned");
                } catch (Throwable e) {
                    got[k] = e;
                }
            }));
        }
        go.countDown();
        for (Thread t : ts) t.join();
        return Arrays.asList(got);
    }

    /** True when e's stack trace has a frame of method in a class whose simple name is cls. */
    static boolean hasFrame(Throwable e, String cls, String method) {
        return Arrays.stream(e.getStackTrace())
            .anyMatch(f -> f.getClassName().endsWith("." + cls) && f.getMethodName().equals(method));
    }
}
