package httpapi_test

// Per-request costs that BenchmarkReserveHandler (built without metrics)
// does not see: the handler with a metrics registry, as a real node runs
// it, and the HTTP counter lookup on its own.

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/ticketd/ticketd/httpapi"
	"github.com/ticketd/ticketd/metrics"
)

func BenchmarkHotReserveWithMetrics(b *testing.B) {
	svc := httpapi.New(httpapi.Config{
		Store:   &stubStore{},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: metrics.New("bench"),
	})
	benchReserve(b, svc.Handler(), `{"count":1000}`, http.StatusOK)
}

func BenchmarkHotObserveHTTP(b *testing.B) {
	m := metrics.New("bench")
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveHTTP("/v1/sequences/:name/ranges", http.MethodPost, http.StatusOK)
	}
}
