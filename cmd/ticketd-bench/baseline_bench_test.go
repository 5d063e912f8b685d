package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkBaselineHandler is the bare Echo handler's cost per request
// without a network, to set beside httpapi's BenchmarkReserveHandler/valid
// (ticketd's handler over a store that answers at once): the difference is
// what ticketd's HTTP layer adds before Raft and the quorum check.
func BenchmarkBaselineHandler(b *testing.B) {
	h := newBaselineHandler()
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
