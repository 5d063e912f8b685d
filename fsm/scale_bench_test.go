package fsm_test

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
)

// The scale of the state (issue #17): what 10 k, 100 k and 1 M sequences
// cost the FSM to create, to hold, to list a page of and to snapshot.
//
//	go test ./fsm/ -run '^$' -bench 'Scale' -count 6 -timeout 30m | tee new.txt
//	benchstat old.txt new.txt
var scaleSizes = []int{10_000, 100_000, 1_000_000}

// scaleName is the i-th sequence's name. Names are created in an order
// unrelated to their byte order (i times an odd constant is a bijection of
// uint32), as a platform naming its tables would.
func scaleName(i int) string { return fmt.Sprintf("t%08x", uint32(i)*2654435761) }

var scaleEntries = struct {
	sync.Mutex
	m map[int][][]byte
}{m: map[int][][]byte{}}

// scaleCreates returns the encoded entries creating sequences 0..n-1.
func scaleCreates(n int) [][]byte {
	scaleEntries.Lock()
	defer scaleEntries.Unlock()
	if e, ok := scaleEntries.m[n]; ok {
		return e
	}
	e := make([][]byte, n)
	for i := range e {
		e[i] = fsm.EncodeCreateSequence(fsm.CreateSequence{Name: scaleName(i), Start: 1, Max: math.MaxInt64})
	}
	scaleEntries.m[n] = e
	return e
}

func buildScale(tb testing.TB, n int) *fsm.FSM {
	f := fsm.New()
	for i, data := range scaleCreates(n) {
		if r, ok := f.Apply(logEntry(uint64(i)+1, 1, data)).(fsm.CreateResult); !ok || !r.Created {
			tb.Fatalf("create %d: %#v", i, r)
		}
	}
	return f
}

var scaleFSMs = struct {
	sync.Mutex
	m map[int]*fsm.FSM
}{m: map[int]*fsm.FSM{}}

// scaleFSM is an FSM holding n sequences, built once per process.
func scaleFSM(tb testing.TB, n int) *fsm.FSM {
	scaleFSMs.Lock()
	defer scaleFSMs.Unlock()
	f, ok := scaleFSMs.m[n]
	if !ok {
		f = buildScale(tb, n)
		scaleFSMs.m[n] = f
	}
	return f
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkScale_Create applies n CreateSequence entries to an empty FSM per
// iteration: ns/seq is the cost of one, heapB/seq what the state holds per
// sequence once built (measured after GC, the encoded entries excluded).
func BenchmarkScale_Create(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			entries := scaleCreates(n)
			var elapsed time.Duration
			var heap float64
			iters := 0
			for b.Loop() {
				b.StopTimer()
				before := heapInUse()
				b.StartTimer()
				t0 := time.Now()
				f := fsm.New()
				for i, data := range entries {
					f.Apply(logEntry(uint64(i)+1, 1, data))
				}
				elapsed += time.Since(t0)
				b.StopTimer()
				heap += float64(heapInUse()-before) / float64(n)
				runtime.KeepAlive(f)
				b.StartTimer()
				iters++
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(iters*n), "ns/seq")
			b.ReportMetric(heap/float64(iters), "heapB/seq")
			_ = entries
		})
	}
}

// BenchmarkScale_Page lists one page of 1000 sequences: the first page, and
// one from the middle of the names (after = the name at n/2 in byte order).
func BenchmarkScale_Page(b *testing.B) {
	for _, n := range scaleSizes {
		f := scaleFSM(b, n)
		all := f.Sequences()
		mid := all[len(all)/2].Name
		for _, c := range []struct{ name, after string }{{"first", ""}, {"middle", mid}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					page, more := f.SequencesPage(c.after, 1000)
					if len(page) != 1000 || !more {
						b.Fatalf("page of %d, more %v", len(page), more)
					}
				}
			})
		}
	}
}

// BenchmarkScale_Snapshot measures Snapshot alone (the copy taken under the
// FSM's lock, which holds up Apply) and Snapshot plus Persist (what a
// snapshot costs the node), with the snapshot's size.
func BenchmarkScale_Snapshot(b *testing.B) {
	for _, n := range scaleSizes {
		f := scaleFSM(b, n)
		b.Run(fmt.Sprintf("n=%d/locked", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				snap, err := f.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				snap.Release()
			}
		})
		b.Run(fmt.Sprintf("n=%d/persist", n), func(b *testing.B) {
			sink := &memSink{id: "bench"}
			b.ReportAllocs()
			for b.Loop() {
				sink.reset()
				snap, err := f.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				if err := snap.Persist(sink); err != nil {
					b.Fatal(err)
				}
				snap.Release()
			}
			b.ReportMetric(float64(sink.buf.Len()), "snapB")
		})
	}
}
