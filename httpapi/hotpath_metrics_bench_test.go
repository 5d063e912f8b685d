package httpapi_test

// Per-request costs that BenchmarkReserveHandler (built without metrics)
// does not see: the handler with a metrics registry, as a real node runs
// it, and the HTTP counter lookup on its own.

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	h := svc.Handler()
	body := []byte(`{"count":1000}`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/sequences/bench/ranges", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

func BenchmarkHotObserveHTTP(b *testing.B) {
	m := metrics.New("bench")
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveHTTP("/v1/sequences/:name/ranges", http.MethodPost, http.StatusOK)
	}
}
