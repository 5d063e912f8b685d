package io.ticketd.client;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The hot-path benchmark: TicketdSequence.next() against AtomicLong.incrementAndGet(), the floor
 * any shared counter pays, in the same run, on 1, 4 and 8 platform threads. Hand-written (Debian has
 * no JMH package): each fork is a fresh JVM; in it, each case gets warmup iterations, then measured
 * ones of a fixed time; every thread folds the values it got into a sink so that the JIT cannot drop
 * the calls. The sequence refills from an in-process stand-in server, so the figures include its
 * refills (every 10 M IDs at most, fetched ahead) as a real run would.
 *
 * <p>Usage: Bench [forks=3] [iterations=5] [warmup=2] [millis=1000]; a fork runs with --fork.
 */
public final class Bench {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--fork")) {
            fork(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            return;
        }
        int forks = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        int iters = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        int millis = args.length > 3 ? Integer.parseInt(args[3]) : 1000;
        System.out.printf("bench: java %s, %d CPUs, %d forks x %d iterations x %d ms (after %d warmup iterations)%n",
            Runtime.version(), Runtime.getRuntime().availableProcessors(), forks, iters, millis, warmup);
        int[] threads = {1, 4, 8};
        List<List<double[]>> all = new ArrayList<>(); // per fork: per thread count {atomic, next}
        String java = ProcessHandle.current().info().command().orElse("java");
        String cp = System.getProperty("java.class.path");
        for (int f = 0; f < forks; f++) {
            Process p = new ProcessBuilder(java, "-cp", cp, Bench.class.getName(), "--fork", "" + iters, "" + warmup, "" + millis)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            List<double[]> rows = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    String[] x = line.trim().split("\\s+");
                    rows.add(new double[] {Double.parseDouble(x[1]), Double.parseDouble(x[2])});
                    System.out.printf("  fork %d: %s%n", f + 1, line);
                }
            }
            if (p.waitFor() != 0) throw new IllegalStateException("fork failed");
            all.add(rows);
        }
        System.out.println("threads  AtomicLong.incrementAndGet ops/s  TicketdSequence.next ops/s  ratio   (median of forks)");
        for (int t = 0; t < threads.length; t++) {
            double[] a = new double[forks];
            double[] n = new double[forks];
            double[] ratio = new double[forks];
            for (int f = 0; f < forks; f++) {
                a[f] = all.get(f).get(t)[0];
                n[f] = all.get(f).get(t)[1];
                ratio[f] = n[f] / a[f];
            }
            System.out.printf("%-8d %,33.0f  %,26.0f  %.2fx (forks %s)%n", threads[t], median(a), median(n), median(ratio), fmt(ratio));
        }
    }

    static String fmt(double[] r) {
        StringBuilder b = new StringBuilder();
        for (double x : r) b.append(b.length() == 0 ? "" : " ").append(String.format("%.2f", x));
        return b.toString();
    }

    static double median(double[] x) {
        double[] s = x.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    /** One fork: for each thread count, prints "threads atomicOpsPerSec nextOpsPerSec" (medians of iterations). */
    static void fork(int iters, int warmup, int millis) throws Exception {
        // The JDK's HTTP server writes an answer's headers and body apart, and without TCP_NODELAY
        // the body then waits out the client's delayed ACK (40 ms): a refill took longer than the
        // 50 ms a 10 M range lasts at 200 M IDs/s, so next() waited on the network and the figure
        // measured the stand-in (0.53x on JDK 17), not the cache. A real node answers in one write.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        StandIn.Backend backend = new StandIn.Backend();
        backend.create("bench", 1, Long.MAX_VALUE);
        try (StandIn node = new StandIn(backend, "bench", 1);
             TicketdClient c = TicketdClient.builder().endpoints(node.url()).build()) {
            TicketdSequence seq = c.sequence("bench");
            AtomicLong counter = new AtomicLong();
            for (int threads : new int[] {1, 4, 8}) {
                double[] a = new double[iters];
                double[] n = new double[iters];
                // Interleaved, so that both cases see the same machine state.
                for (int i = -warmup; i < iters; i++) {
                    double ra = run(threads, millis, counter::incrementAndGet);
                    double rn = run(threads, millis, seq::next);
                    if (i >= 0) {
                        a[i] = ra;
                        n[i] = rn;
                    }
                }
                System.out.printf("%d %.0f %.0f%n", threads, median(a), median(n));
                System.err.printf("  fork: %d threads: %s%n", threads, seq.stats());
                System.out.flush();
            }
        }
    }

    static volatile boolean stop;

    /** ops/s of f on the given number of threads over millis. */
    static double run(int threads, int millis, LongSupplier f) throws Exception {
        stop = false;
        long[] counts = new long[threads * 16]; // padded: one cache line per thread
        CountDownLatch start = new CountDownLatch(1);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            int slot = t * 16;
            ts[t] = new Thread(() -> {
                long x = 0;
                long ops = 0;
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                while (!stop) {
                    for (int k = 0; k < 1024; k++) x ^= f.getAsLong();
                    ops += 1024;
                }
                counts[slot] = ops;
                sink ^= x;
            });
            ts[t].start();
        }
        long t0 = System.nanoTime();
        start.countDown();
        Thread.sleep(millis);
        stop = true;
        for (Thread t : ts) t.join();
        double secs = (System.nanoTime() - t0) / 1e9;
        long total = 0;
        for (int t = 0; t < threads; t++) total += counts[t * 16];
        return total / secs;
    }
}
