//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ticketd/ticketd/jepsen/checker"
)

// recorder keeps the history in memory and streams it to history.jsonl as
// operations complete, so a run that dies still leaves what it saw.
type recorder struct {
	t0 time.Time // monotonic origin of every time in the history

	mu      sync.Mutex
	ops     []checker.Op
	nemeses []checker.Nemesis
	audited *checker.Audit
	next    int64
	f       *os.File
	w       *bufio.Writer
	enc     *json.Encoder
	stopped chan struct{}
	flushed chan struct{}
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := &recorder{t0: time.Now(), f: f, w: w, enc: json.NewEncoder(w), stopped: make(chan struct{}), flushed: make(chan struct{})}
	go r.flusher()
	return r, nil
}

func (r *recorder) flusher() {
	defer close(r.flushed)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stopped:
			return
		case <-t.C:
			r.mu.Lock()
			_ = r.w.Flush()
			r.mu.Unlock()
		}
	}
}

// now is the time since the start of the run, on the monotonic clock.
func (r *recorder) now() int64 { return int64(time.Since(r.t0)) }

// invoke starts an operation; complete it with done.
func (r *recorder) invoke(o checker.Op) *checker.Op {
	o.Type = "op"
	o.Invoke = r.now()
	return &o
}

// done completes an operation and records it.
func (r *recorder) done(o *checker.Op) {
	o.Complete = r.now()
	r.append(o)
}

// add records an operation whose times the caller set (a burst of calls
// recorded as one operation).
func (r *recorder) add(o *checker.Op) {
	o.Type = "op"
	r.append(o)
}

// append numbers an operation and records it in memory and in the file.
func (r *recorder) append(o *checker.Op) {
	r.mu.Lock()
	o.Index = r.next
	r.next++
	r.ops = append(r.ops, *o)
	_ = r.enc.Encode(o)
	r.mu.Unlock()
}

func (r *recorder) nemesis(n checker.Nemesis) {
	n.Type = "nemesis"
	r.mu.Lock()
	r.nemeses = append(r.nemeses, n)
	_ = r.enc.Encode(n)
	r.mu.Unlock()
}

// audit records what the harness read of the main cluster's audit.
func (r *recorder) audit(a *checker.Audit) {
	a.Type = "audit"
	r.mu.Lock()
	r.audited = a
	_ = r.enc.Encode(a)
	r.mu.Unlock()
}

// snapshot copies the operations recorded so far.
func (r *recorder) snapshot() []checker.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// close writes the meta record and returns the whole history.
func (r *recorder) close(meta checker.Meta) (*checker.History, error) {
	close(r.stopped)
	<-r.flushed
	r.mu.Lock()
	defer r.mu.Unlock()
	meta.Type = "meta"
	_ = r.enc.Encode(meta)
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return &checker.History{Ops: r.ops, Nemeses: r.nemeses, Audit: r.audited, Meta: meta}, err
}
