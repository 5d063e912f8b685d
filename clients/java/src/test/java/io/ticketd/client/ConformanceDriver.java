package io.ticketd.client;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The Java library's conformance driver: speaks clients/conformance/PROTOCOL.md on stdin/stdout.
 * One client from the environment; each lane is one thread (odd lanes virtual where the JDK has
 * them, even lanes platform) running its commands in order. It lives in the test sources, in the
 * library's package, so that it alone (with the tests) can switch on a planted bug.
 */
public final class ConformanceDriver {
    private static final String EOF = "\u0000eof";

    private final TicketdClient client;
    private final Map<String, TicketdSequence> seqs = new ConcurrentHashMap<>();
    private final Map<String, SnowflakeRemote> flakes = new ConcurrentHashMap<>();
    private final Map<String, BlockingQueue<String>> lanes = new ConcurrentHashMap<>();
    private final List<Thread> threads = new ArrayList<>();
    private final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    private final ReentrantLock outLock = new ReentrantLock();

    private ConformanceDriver(TicketdClient client) {
        this.client = client;
    }

    public static void main(String[] args) throws Exception {
        String plant = env("TICKETD_CONFORMANCE_PLANT", "");
        switch (plant) {
            case "":
                break;
            case "range-twice-after-retry":
                Plants.rangeTwiceAfterRetry = true;
                break;
            default:
                System.err.println("driver: unknown plant " + plant);
                System.exit(2);
        }
        TicketdClient.Builder b = TicketdClient.builder(); // endpoints and token from TICKETD_ADDR, TICKETD_TOKEN
        String call = env("TICKETD_CONFORMANCE_CALL_TIMEOUT_MS", "");
        if (!call.isEmpty()) b.callTimeout(Duration.ofMillis(Long.parseLong(call)));
        String attempt = env("TICKETD_CONFORMANCE_ATTEMPT_TIMEOUT_MS", "");
        if (!attempt.isEmpty()) b.attemptTimeout(Duration.ofMillis(Long.parseLong(attempt)));
        ConformanceDriver d = new ConformanceDriver(b.build());
        System.err.println("driver: java " + Runtime.version() + ", virtual threads " + (TestSupport.hasVirtualThreads() ? "on odd lanes" : "unavailable (JDK < 21): every lane on a platform thread")
            + (plant.isEmpty() ? "" : ", plant " + plant));
        d.write("ready java " + TicketdClient.VERSION);
        d.run();
        System.exit(0);
    }

    private static String env(String k, String dflt) {
        String v = System.getenv(k);
        return v == null ? dflt : v.trim();
    }

    private void run() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            int sp = line.indexOf(' ');
            String lane = sp < 0 ? line : line.substring(0, sp);
            lanes.computeIfAbsent(lane, this::startLane).add(line);
        }
        for (BlockingQueue<String> q : lanes.values()) q.add(EOF);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
        for (Thread t : threads) t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
        client.close();
        out.flush();
    }

    private BlockingQueue<String> startLane(String lane) {
        BlockingQueue<String> q = new LinkedBlockingQueue<>();
        boolean virtual;
        try {
            virtual = Long.parseLong(lane) % 2 != 0;
        } catch (NumberFormatException e) {
            virtual = false;
        }
        Thread t = TestSupport.start(virtual, "lane-" + lane, () -> {
            while (true) {
                String cmd;
                try {
                    cmd = q.take();
                } catch (InterruptedException e) {
                    return;
                }
                if (cmd.equals(EOF)) return;
                write(lane + " " + execute(cmd.split(" ")));
            }
        });
        threads.add(t);
        return q;
    }

    private void write(String line) {
        outLock.lock();
        try {
            out.print(line.replace('\n', ' ').replace('\r', ' ') + "\n");
            out.flush();
        } finally {
            outLock.unlock();
        }
    }

    /** One command (f[0] is the lane) to its answer, "ok …" or "err kind message". */
    private String execute(String[] f) {
        try {
            String op = f.length > 1 ? f[1] : "";
            switch (op) {
                case "open":
                    need(f, 4);
                    seqs.put(f[2], client.sequence(f[3]));
                    return "ok";
                case "next":
                    need(f, 3);
                    return "ok " + seq(f[2]).next();
                case "nextn": {
                    need(f, 4);
                    StringBuilder b = new StringBuilder("ok");
                    for (Range r : seq(f[2]).nextN(parseInt(f[3]))) b.append(' ').append(r.first()).append('-').append(r.last());
                    return b.toString();
                }
                case "reserve": {
                    need(f, 4);
                    Range r = client.reserve(f[2], parseLong(f[3]));
                    return "ok " + r.first() + "-" + r.last();
                }
                case "snowflake":
                    need(f, 4);
                    flakes.put(f[2], client.snowflake(f[3]));
                    return "ok";
                case "snext":
                    need(f, 3);
                    return "ok " + flake(f[2]).next();
                case "snextn": {
                    need(f, 4);
                    StringBuilder b = new StringBuilder("ok");
                    for (long id : flake(f[2]).nextN(parseInt(f[3]))) b.append(' ').append(id);
                    return b.toString();
                }
                case "fork":
                    // The JVM has no fork: a Java program starts new processes, which share nothing.
                    return "err unsupported fork: the JVM cannot fork a running process";
                case "close":
                    client.close();
                    return "ok threads=" + threadsLeft();
                default:
                    return "err untyped UnknownCommand: " + String.join(" ", f);
            }
        } catch (Throwable e) {
            return "err " + kind(e) + " " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /**
     * Threads the library started still alive after close: its own (ticketd-*) and, counted too, the
     * selector thread of the JDK HttpClient it made (HttpClient-*), which JDK 17 ends only once the
     * client is unreachable and its select (3 s at most) wakes up; close() drops the client's
     * reference, and this waits up to 5 s for it (measured: about 3 s on JDK 17, at once on 25).
     */
    static long threadsLeft() {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            long n = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && (t.getName().startsWith("ticketd-") || t.getName().startsWith("HttpClient-")))
                .count();
            if (n == 0 || System.nanoTime() > end) return n;
            System.gc();
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return n;
            }
        }
    }

    /** The protocol's error kind, by the library's type; anything else is untyped. */
    static String kind(Throwable e) {
        if (e instanceof ClosedException) return "closed";
        if (e instanceof NotFoundException) return "not_found";
        if (e instanceof ExhaustedException) return "exhausted";
        if (e instanceof UnauthorizedException) return "unauthorized";
        if (e instanceof ForbiddenException) return "forbidden";
        if (e instanceof InvalidArgumentException) return "invalid_argument";
        if (e instanceof ConflictException) return "conflict";
        if (e instanceof UnavailableException) return "unavailable";
        return "untyped";
    }

    private static void need(String[] f, int n) {
        if (f.length != n) throw new InvalidArgumentException("want " + (n - 1) + " fields after the lane, got " + (f.length - 1));
    }

    private static int parseInt(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new InvalidArgumentException("not a number: " + s);
        }
    }

    private static long parseLong(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new InvalidArgumentException("not a number: " + s);
        }
    }

    private TicketdSequence seq(String h) {
        TicketdSequence s = seqs.get(h);
        if (s == null) throw new InvalidArgumentException("no handle " + h);
        return s;
    }

    private SnowflakeRemote flake(String h) {
        SnowflakeRemote s = flakes.get(h);
        if (s == null) throw new InvalidArgumentException("no handle " + h);
        return s;
    }
}
