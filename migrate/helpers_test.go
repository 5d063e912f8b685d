package migrate_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/migrate"
)

// Numbers of the concurrent-writer tests: the legacy writer inserts at
// most legacyLimit rows in all, so a margin of testMargin covers every ID
// it can hand out after the source was read.
const (
	legacyLimit = 1500
	testMargin  = 5000
)

func newCluster(t *testing.T) *client.Client {
	t.Helper()
	tc := testcluster.New(t, 3, nil)
	c, err := client.New(tc.URLs(), client.WithBackoff(5*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// legacyWriter inserts rows with the legacy generator in a loop, the way
// the old application keeps writing while teams move to ticketd.
type legacyWriter struct {
	mu   sync.Mutex
	ids  []int64
	err  error
	stop chan struct{}
	done chan struct{}
}

func startLegacy(t *testing.T, insert func(context.Context) (int64, error)) *legacyWriter {
	t.Helper()
	w := &legacyWriter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; i < legacyLimit; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			id, err := insert(ctx)
			cancel()
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				return
			}
			w.ids = append(w.ids, id)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.halt() })
	return w
}

func (w *legacyWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ids)
}

func (w *legacyWriter) waitFor(t *testing.T, n int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, 2*time.Millisecond, "legacy writer inserts", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			t.Fatalf("legacy writer: %v", w.err)
		}
		return len(w.ids) >= n
	})
}

func (w *legacyWriter) halt() []int64 {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ids)
}

// racedSource is a real source read while the legacy writer writes: it
// lets the writer insert rows after migrate started and before it reads
// the source, and again after the read, before migrate creates or raises
// the sequence: the window the margin is for. (Left to the scheduler, a
// fast migrate can slip between two inserts.)
type racedSource struct {
	migrate.Source
	t      *testing.T
	w      *legacyWriter
	readAt int
}

func (s *racedSource) Highest(ctx context.Context) (int64, error) {
	s.w.waitFor(s.t, min(s.w.count()+10, legacyLimit))
	h, err := s.Source.Highest(ctx)
	s.readAt = s.w.count()
	s.w.waitFor(s.t, min(s.w.count()+10, legacyLimit))
	return h, err
}

// migrateUnderLegacyWrites runs a migration while the legacy generator
// keeps inserting, lets it insert more after migrate returned (the
// transition), stops it, and checks the promise: every ID ticketd hands
// out afterwards is above every legacy ID, and no ID appears twice.
func migrateUnderLegacyWrites(t *testing.T, c *client.Client, seq string, src migrate.Source, insert func(context.Context) (int64, error), want migrate.Action) migrate.Result {
	t.Helper()
	ctx := ctxT(t)
	w := startLegacy(t, insert)
	w.waitFor(t, 20)
	before := w.count()
	raced := &racedSource{Source: src, t: t, w: w}
	res, err := migrate.Run(ctx, c, seq, raced, migrate.Options{Margin: testMargin}, false)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	during := w.count() - before
	afterRead := w.count() - raced.readAt
	if res.Action != want || res.Done != want {
		t.Fatalf("planned %q, did %q; want %q", res.Action, res.Done, want)
	}
	// The legacy generator goes on for a while after migrate returned.
	w.waitFor(t, min(w.count()+100, legacyLimit))
	legacy := w.halt()
	legacyMax := slices.Max(legacy)
	if during < 1 {
		t.Fatalf("the legacy writer inserted nothing while migrate ran; the test shows nothing")
	}
	if res.SourceHighest < legacy[before-1] {
		t.Fatalf("migrate read highest %d, below legacy ID %d inserted before it started", res.SourceHighest, legacy[before-1])
	}
	if legacyMax > res.Target {
		t.Fatalf("legacy IDs reached %d, past the target %d: the margin %d did not cover the writer (test numbers wrong)", legacyMax, res.Target, testMargin)
	}
	t.Logf("source %s: migrate read highest %d, target %d (margin %d); legacy writer inserted %d rows, %d of them while migrate ran (%d after migrate read the source), the highest %d (%d above what migrate read)",
		res.Source, res.SourceHighest, res.Target, testMargin, len(legacy), during, afterRead, legacyMax, legacyMax-res.SourceHighest)

	seen := map[int64]bool{}
	for _, id := range legacy {
		if seen[id] {
			t.Fatalf("legacy generator handed out %d twice", id)
		}
		seen[id] = true
	}
	var ticketd []int64
	for i := 0; i < 5; i++ {
		r, err := c.Reserve(ctx, seq, 100)
		if err != nil {
			t.Fatalf("reserve: %v", err)
		}
		for id := r.First; id <= r.Last; id++ {
			ticketd = append(ticketd, id)
		}
	}
	h := c.Sequence(seq)
	for i := 0; i < 50; i++ {
		id, err := h.Next(ctx)
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		ticketd = append(ticketd, id)
	}
	for _, id := range ticketd {
		if id <= legacyMax || id <= res.Target {
			t.Fatalf("ticketd handed out %d, not above the legacy IDs (highest %d) and the target %d", id, legacyMax, res.Target)
		}
		if seen[id] {
			t.Fatalf("ID %d handed out twice", id)
		}
		seen[id] = true
	}
	t.Logf("ticketd then handed out %d IDs, %d to %d: all above legacy's %d, none twice", len(ticketd), slices.Min(ticketd), slices.Max(ticketd), legacyMax)
	return res
}

func seqInfo(t *testing.T, c *client.Client, name string) api.Sequence {
	t.Helper()
	info, err := c.SequenceInfo(ctxT(t), name)
	if err != nil {
		t.Fatalf("sequence %q: %v", name, err)
	}
	return info
}

func mustNotExist(t *testing.T, c *client.Client, name string) {
	t.Helper()
	if _, err := c.SequenceInfo(ctxT(t), name); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("sequence %q: want ErrNotFound, got %v", name, err)
	}
}

func sameSeq(t *testing.T, what string, a, b api.Sequence) {
	t.Helper()
	if a.Name != b.Name || a.Start != b.Start || a.Max != b.Max || (a.Next == nil) != (b.Next == nil) || (a.Next != nil && *a.Next != *b.Next) {
		t.Fatalf("%s changed the sequence: %+v -> %+v", what, a, b)
	}
}

// wantErr checks that err wraps target and names every word in names.
func wantErr(t *testing.T, err, target error, names ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("want %v, got %v", target, err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("error %q does not name %q", err, n)
		}
	}
	t.Logf("error as expected: %v", err)
}

// checkRerunAndDryRun: a dry run and a second run over an unchanged source
// change nothing.
func checkRerunAndDryRun(t *testing.T, c *client.Client, seq string, src migrate.Source, margin int64) {
	t.Helper()
	ctx := ctxT(t)
	before := seqInfo(t, c, seq)
	dry, err := migrate.Run(ctx, c, seq, src, migrate.Options{Margin: margin}, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Action != migrate.ActionNone || dry.Done != "" {
		t.Fatalf("dry run after migrate: planned %q done %q; want nothing to do", dry.Action, dry.Done)
	}
	again, err := migrate.Run(ctx, c, seq, src, migrate.Options{Margin: margin}, false)
	if err != nil {
		t.Fatal(err)
	}
	if again.Action != migrate.ActionNone || again.Done != migrate.ActionNone || again.Skipped != 0 {
		t.Fatalf("second run: planned %q did %q skipped %d; want nothing to do", again.Action, again.Done, again.Skipped)
	}
	sameSeq(t, "a second run", before, seqInfo(t, c, seq))
}
