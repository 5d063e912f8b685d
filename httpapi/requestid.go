package httpapi

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"
)

// Request ids are 16 lowercase hex digits, as when each was 8 bytes read
// from crypto/rand, but a request no longer pays for a read of the system's
// random source: the id is a per-process counter, started at a random
// 64-bit value read once, passed through a bijective mix (splitmix64's
// finalizer). Within a process every id differs (a bijection of distinct
// counter values) for 2^64 requests; two processes (nodes, or one node
// across restarts) collide only if their counters reach the same value,
// which for n ids each is a chance of about 2n/2^64. The mix keeps ids
// looking unrelated, so that consecutive requests are not read as a
// sequence; they are not secret and were never meant to be.
var requestIDCounter atomic.Uint64

func init() {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24+)
	requestIDCounter.Store(binary.LittleEndian.Uint64(b[:]))
}

func newRequestID() string {
	x := requestIDCounter.Add(1)
	// splitmix64's finalizer: each step (xor-shift, multiply by an odd
	// constant) is invertible, so distinct counters give distinct ids.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	const digits = "0123456789abcdef"
	var s [16]byte
	for i := len(s) - 1; i >= 0; i-- {
		s[i] = digits[x&0xf]
		x >>= 4
	}
	return string(s[:])
}
