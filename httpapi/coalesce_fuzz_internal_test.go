package httpapi

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/ticketd/ticketd/api"
)

// FuzzGrantedFirst: whatever the leader answers a coalesced reservation, a
// follower serves from it only a range of exactly count positive IDs of the
// sequence it asked for, which it can cut into parts without overflow.
func FuzzGrantedFirst(f *testing.F) {
	for _, seed := range []struct {
		body  string
		count int64
	}{
		{`{"sequence":"s","first":1,"last":10}`, 10},
		{`{"sequence":"s","first":9223372036854775798,"last":9223372036854775807}`, 10},
		{`{"sequence":"s","first":0,"last":9}`, 10},
		{`{"sequence":"s","first":5,"last":4}`, 0},
		{`{"sequence":"s","first":-9223372036854775808,"last":9223372036854775807}`, 0},
		{`{"sequence":"t","first":1,"last":10}`, 10},
		{`{"sequence":"s","first":1,"last":10,"extra":[1,2]}`, 10},
		{`{"first":"1"}`, 1},
		{`null`, 1},
		{``, 1},
		{`{"sequence":"s","first":1e3,"last":1}`, 1},
	} {
		f.Add([]byte(seed.body), seed.count)
	}
	f.Fuzz(func(t *testing.T, body []byte, count int64) {
		first, ok := grantedFirst(body, "s", count)
		if !ok {
			return
		}
		var r api.Range
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("accepted %q, which does not decode: %v", body, err)
		}
		if r.Sequence != "s" || first != r.First || first < 1 || count < 1 || first > math.MaxInt64-(count-1) || r.Last != first+count-1 {
			t.Fatalf("accepted %q for %d IDs of s: first %d", body, count, first)
		}
	})
}
