package httpapi_test

// Hot-path micro-benchmarks of a reservation's JSON for scripts/bench.sh
// (go test -run XXX -bench . -count 6 ./httpapi/ | benchstat). The server's
// decodeBody is not exported; "decode_request_strict" repeats its steps
// (read the body, a Decoder with DisallowUnknownFields, then a Token that
// must be EOF) so that a change in its cost shows here, and
// BenchmarkReserveHandler covers the real handler end to end.

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"

	"github.com/ticketd/ticketd/api"
)

func BenchmarkHotReservationJSON(b *testing.B) {
	reqBody := []byte(`{"count":1000}`)
	resp := api.Range{Sequence: "orders", First: math.MaxInt64 - 2000, Last: math.MaxInt64 - 1001}
	respBody, err := json.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}

	b.Run("decode_request_strict", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(reqBody)))
		for b.Loop() {
			data, err := io.ReadAll(bytes.NewReader(reqBody))
			if err != nil {
				b.Fatal(err)
			}
			var req struct {
				Count *int64 `json:"count"`
			}
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil || req.Count == nil || *req.Count != 1000 {
				b.Fatalf("decode: %v", err)
			}
			if _, err := dec.Token(); err != io.EOF {
				b.Fatalf("trailing data: %v", err)
			}
		}
	})
	b.Run("decode_request_plain", func(b *testing.B) {
		// What the strictness costs: a plain Unmarshal of the same body.
		b.ReportAllocs()
		b.SetBytes(int64(len(reqBody)))
		for b.Loop() {
			var req api.ReserveRequest
			if err := json.Unmarshal(reqBody, &req); err != nil || req.Count != 1000 {
				b.Fatalf("decode: %v", err)
			}
		}
	})
	b.Run("encode_response", func(b *testing.B) {
		// Echo's c.JSON: a json.Encoder writing to the response.
		var buf bytes.Buffer
		b.ReportAllocs()
		b.SetBytes(int64(len(respBody)))
		for b.Loop() {
			buf.Reset()
			if err := json.NewEncoder(&buf).Encode(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode_response", func(b *testing.B) {
		// The client's side: the SDK and the load generator.
		b.ReportAllocs()
		b.SetBytes(int64(len(respBody)))
		for b.Loop() {
			var r api.Range
			if err := json.Unmarshal(respBody, &r); err != nil || r.Last != resp.Last {
				b.Fatalf("decode: %v", err)
			}
		}
	})
}
