package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"sync"
	"testing"
)

var requestIDForm = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestNewRequestID_FormAndUnique(t *testing.T) {
	const workers, each = 4, 50000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ids[w] = append(ids[w], newRequestID())
			}
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, workers*each)
	for _, l := range ids {
		for _, id := range l {
			if !requestIDForm.MatchString(id) {
				t.Fatalf("request id %q is not 16 lowercase hex digits", id)
			}
			if seen[id] {
				t.Fatalf("request id %q handed out twice", id)
			}
			seen[id] = true
		}
	}
}

// BenchmarkHotRequestID compares newRequestID with what it replaced: 8
// bytes of crypto/rand, hex-encoded, per request.
func BenchmarkHotRequestID(b *testing.B) {
	b.Run("crypto_rand_hex", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r [8]byte
			_, _ = rand.Read(r[:])
			sinkID = hex.EncodeToString(r[:])
		}
	})
	b.Run("counter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkID = newRequestID()
		}
	})
}

var sinkID string
