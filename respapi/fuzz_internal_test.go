package respapi

import (
	"errors"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

// FuzzLeaderAnswer feeds any status and body as the leader's answer to a
// forwarded reservation: the front never panics, serves a range only if it
// is exactly the count asked of the sequence asked, and otherwise returns an
// error (of a domain kind when the body is a problem document of one).
func FuzzLeaderAnswer(f *testing.F) {
	f.Add(200, []byte(`{"sequence":"orders","first":1,"last":10}`), int64(10))
	f.Add(200, []byte(`{"sequence":"orders","first":9223372036854775798,"last":9223372036854775807}`), int64(10))
	f.Add(200, []byte(`{"sequence":"orders","first":-5,"last":4}`), int64(10))
	f.Add(200, []byte(`{"sequence":"other","first":1,"last":10}`), int64(10))
	f.Add(200, []byte(`{"sequence":"orders","first":1`), int64(1))
	f.Add(404, []byte(`{"type":"urn:ticketd:problem:sequence-not-found","title":"not found","status":404}`), int64(1))
	f.Add(503, []byte(`{"type":"urn:ticketd:problem:unavailable","title":"x","status":503,"detail":"no leader"}`), int64(1))
	f.Add(409, []byte(`{"type":"urn:ticketd:problem:sequence-exhausted","status":409}`), int64(1))
	f.Add(500, []byte(`<html>`), int64(1))
	f.Fuzz(func(t *testing.T, status int, body []byte, count int64) {
		if count < 1 || count > api.MaxReserveCount {
			return
		}
		var r api.Range
		err := decodeAnswer(status, body, &r)
		if err != nil {
			if status/100 == 2 && (errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrUnavailable)) {
				t.Fatalf("a %d answer became a problem of a kind: %v", status, err)
			}
			return
		}
		if status/100 != 2 {
			t.Fatalf("a %d answer decoded without an error", status)
		}
		first, last, err := checkRange(r, "orders", count)
		if err != nil {
			return
		}
		if first < 1 || last < first || last-first+1 != count {
			t.Fatalf("served [%d, %d] for %d IDs", first, last, count)
		}
	})
}
