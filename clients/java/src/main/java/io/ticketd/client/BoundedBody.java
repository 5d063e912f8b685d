package io.ticketd.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * An answer's body as UTF-8 text, refused past a limit: ticketd's answers are small, so a longer
 * one (a proxy's page, a broken node) is a failed attempt rather than memory without bound. The
 * Go and Python clients cap answers at 1 MiB too. BodyHandlers.ofString() has no limit; reading
 * through ofInputStream would move the read out of the attempt's bounded future.
 */
final class BoundedBody implements HttpResponse.BodySubscriber<String> {
    /** The longest answer body read, as the other clients' (1 MiB). */
    static final int MAX_ANSWER_BYTES = 1 << 20;

    static HttpResponse.BodyHandler<String> handler(int limit) {
        return info -> new BoundedBody(limit);
    }

    private final int limit;
    private final CompletableFuture<String> result = new CompletableFuture<>();
    private final ByteArrayOutputStream buf = new ByteArrayOutputStream();
    private Flow.Subscription subscription;

    private BoundedBody(int limit) {
        this.limit = limit;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
        if (result.isDone()) return; // refused already: the rest is dropped
        for (ByteBuffer b : items) {
            if (b.remaining() > limit - buf.size()) {
                subscription.cancel();
                result.completeExceptionally(new IOException("answer body longer than " + limit + " bytes; refused"));
                return;
            }
            byte[] chunk = new byte[b.remaining()];
            b.get(chunk);
            buf.write(chunk, 0, chunk.length);
        }
    }

    @Override
    public void onError(Throwable t) {
        result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
        result.complete(buf.toString(StandardCharsets.UTF_8));
    }

    @Override
    public CompletionStage<String> getBody() {
        return result;
    }
}
