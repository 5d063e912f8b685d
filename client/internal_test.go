package client

import (
	"context"
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

func TestBlock_CounterWrappedPast2To63_HandsOutNothing(t *testing.T) {
	for _, n := range []int64{0, 10} {
		b := &block{first: 100, n: n, trigger: -1}
		b.used.Store(math.MaxInt64 - 5) // a used-up block hammered for days
		for i := 0; i < 3; i++ {
			if r, _, ok := b.take(api10M); ok {
				t.Fatalf("n=%d: take after the counter wrapped = %+v; want nothing", n, r)
			}
		}
		if u := b.used.Load(); u < n || uint64(u) >= counterReset {
			t.Fatalf("n=%d: the counter is %d; a used-up block's counter is set back to n past 2^62", n, u)
		}
		if b.remaining() != 0 || b.taken() != n {
			t.Fatalf("n=%d: remaining %d, taken %d after the wrap", n, b.remaining(), b.taken())
		}
		c, err := New([]string{"http://127.0.0.1:1"}, WithBackoff(time.Millisecond, 10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		s := c.Sequence("s")
		s.cur.Store(b)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		if id, err := s.Next(ctx); err == nil {
			t.Fatalf("n=%d: Next handed out %d from a wrapped block", n, id)
		}
		cancel()
		c.Close()
	}
}

const api10M = 10_000_000

func TestClient_SequencesNobodyHolds_AreDropped(t *testing.T) {
	c, err := New([]string{"http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 100; i++ {
		c.Sequence("s") // dropped at once
	}
	kept := c.Sequence("kept")
	registered := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.seqs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for registered() > 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := registered(); n != 1 {
		t.Fatalf("%d Sequences registered; want only the one still held", n)
	}
	c.Close()
	if _, err := kept.Next(t.Context()); err != ErrClosed {
		t.Fatalf("Next on the kept Sequence after Close: %v", err)
	}
}

// TestSequencesPage_FullPageFitsTheAnswerBound: a page of api.MaxSequencePage
// sequences with the longest names and largest numbers is read whole.
func TestSequencesPage_FullPageFitsTheAnswerBound(t *testing.T) {
	big := int64(math.MaxInt64)
	l := api.SequenceList{Next: strings.Repeat("n", api.MaxSequenceNameLen)}
	for i := 0; i < api.MaxSequencePage; i++ {
		l.Sequences = append(l.Sequences, api.Sequence{Name: strings.Repeat("n", api.MaxSequenceNameLen), Next: &big, Start: big, Max: big, Remaining: big})
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxAnswerBytes {
		t.Fatalf("a full page is %d bytes; the client reads at most %d", len(b), maxAnswerBytes)
	}
	t.Logf("a full page of the largest sequences: %d bytes of %d", len(b), maxAnswerBytes)
}
