package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/httpapi"
)

// BenchmarkReserveHTTP reserves 1,000 IDs per request from a real single
// node (Raft, bolt, HTTP on 127.0.0.1) through keep-alive connections. Allocs
// count both the client and the server, which share the process.
func BenchmarkReserveHTTP(b *testing.B) {
	n := startNode(b)
	if r := n.MustCall(b, http.MethodPut, "/v1/sequences/bench", nil); r.Status != http.StatusCreated {
		b.Fatalf("create: %d %s", r.Status, r.Body)
	}
	body := []byte(`{"count":1000}`)
	url := n.Base + "/v1/sequences/bench/ranges"
	var ids atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var last int64
		for pb.Next() {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := n.HTTP.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			var rg api.Range
			err = json.NewDecoder(resp.Body).Decode(&rg)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || rg.Last-rg.First+1 != 1000 {
				b.Errorf("reserve: status %d range %+v err %v", resp.StatusCode, rg, err)
				return
			}
			// One client's consecutive ranges must increase.
			if rg.First <= last {
				b.Errorf("range %+v not above the previous one (last %d)", rg, last)
				return
			}
			last = rg.Last
			ids.Add(1000)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(ids.Load())/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkReserveHandler measures the reserve handler without Raft:
// routing, the strict body decoding and validation, and the JSON or problem
// answer, over a Store that answers at once. decodeBody itself is not
// exported, so this is as close to it as the package's outside gets.
func BenchmarkReserveHandler(b *testing.B) {
	svc := httpapi.New(httpapi.Config{Store: &stubStore{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := svc.Handler()
	for _, bc := range []struct {
		name   string
		body   string
		status int
	}{
		{"valid", `{"count":1000}`, http.StatusOK},
		{"bad_count", `{"count":0}`, http.StatusBadRequest},
		{"unknown_field", `{"count":1000,"extra":1}`, http.StatusBadRequest},
		{"wrong_type", `{"count":"1000"}`, http.StatusBadRequest},
	} {
		b.Run(bc.name, func(b *testing.B) { benchReserve(b, h, bc.body, bc.status) })
	}
}

// benchReserve posts body to h's reservation route in a benchmark loop and
// fails unless every answer has status.
func benchReserve(b *testing.B, h http.Handler, body string, status int) {
	data := []byte(body)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/sequences/bench/ranges", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != status {
			b.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
		}
	}
}

// stubStore serves as a leader whose every reservation succeeds at once.
// stubStore answers reservations instantly; the embedded (nil) Store makes
// any other method panic, which these benchmarks never call.
type stubStore struct {
	httpapi.Store
	next atomic.Int64
}

var errStub = errors.New("not implemented by the stub")

func (s *stubStore) ID() string                             { return "stub" }
func (s *stubStore) Serving() bool                          { return true }
func (s *stubStore) LeaderHTTPAddr() (string, string, bool) { return "stub", "127.0.0.1:1", true }
func (s *stubStore) Reserve(_ context.Context, _ string, count int64) (int64, int64, error) {
	last := s.next.Add(count)
	return last - count + 1, last, nil
}
func (s *stubStore) CreateSequence(context.Context, domain.SequenceSettings) (domain.Sequence, bool, error) {
	return domain.Sequence{}, false, errStub
}
func (s *stubStore) Sequence(context.Context, string) (domain.Sequence, error) {
	return domain.Sequence{}, errStub
}
func (s *stubStore) Sequences(context.Context, string, int) ([]domain.Sequence, bool, error) {
	return nil, false, errStub
}
func (s *stubStore) Status() (domain.ClusterStatus, error)     { return domain.ClusterStatus{}, errStub }
func (s *stubStore) Join(context.Context, domain.Member) error { return errStub }
func (s *stubStore) UpdateMember(context.Context, domain.Member) error {
	return errStub
}
func (s *stubStore) Remove(context.Context, string) error    { return errStub }
func (s *stubStore) Snapshot(context.Context) error          { return errStub }
func (s *stubStore) Ready() error                            { return nil }
func (s *stubStore) Backup(context.Context, io.Writer) error { return errStub }
func (s *stubStore) Restore(context.Context, []byte, int64) error {
	return errStub
}

var _ httpapi.Store = (*stubStore)(nil)
