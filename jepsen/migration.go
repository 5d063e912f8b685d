//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/ticketd/ticketd/jepsen/checker"
)

// migration is what one migration did, for the run's notes.
type migration struct {
	Name       string `json:"name"`
	Done       bool   `json:"done"`
	BackupSize int    `json:"backup_bytes,omitempty"`
	Restored   bool   `json:"restored"`
	// SecondRestore is the answer to the second restore of the same
	// backup, sent after the restored cluster had issued IDs: "refused
	// (409 conflict)" is right.
	SecondRestore string `json:"second_restore,omitempty"`
	Note          string `json:"note,omitempty"`
}

// migrate moves a copy of the main cluster, under load, to a new cluster:
// a backup of the main cluster, a fresh cluster of --migration-nodes nodes
// (no nemesis; process mode only), a restore with --migration-advance, a
// few seconds of reservations of the same sequences and lease acquires of
// the same namespaces on it, then a second restore of the same backup,
// which must be refused now that the new cluster has issued IDs (if it is
// accepted, the reservations go on: whatever it reissues shows). The main
// cluster's clients keep running throughout; the checker compares both.
func (w *workload) migrate(ctx context.Context, b backend, k int, seed uint64) migration {
	m := migration{Name: fmt.Sprintf("B%d", k)}
	if w.cfg.Docker {
		m.Note = "migration skipped: process mode only"
		return m
	}
	rnd := rand.New(rand.NewPCG(seed, uint64(k)+7000))
	w.log("migration %s: backup of the main cluster", m.Name)
	backup := w.backup(ctx, m.Name, rnd)
	if backup == nil {
		m.Note = "no backup within 30 s"
		return m
	}
	m.BackupSize = len(backup)

	cfgB := *w.cfg
	cfgB.Nodes = w.cfg.MigrationNodes
	cb := newCluster(b, &cfgB, w.hc, w.log)
	cb.prefix, cb.slotBase, cb.name = fmt.Sprintf("r%dn", k), 20+8*(k-1), m.Name
	defer cb.stopAll()
	w.log("migration %s: starting %d fresh nodes", m.Name, cfgB.Nodes)
	bctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err := cb.boot(bctx)
	cancel()
	if err != nil {
		m.Note = "restored cluster did not start: " + err.Error()
		return m
	}
	ok, why := w.restore(ctx, cb, backup, false, rnd)
	if !ok {
		m.Note = "restore failed: " + why
		return m
	}
	m.Restored = true
	w.log("migration %s: restored (advance %d); reserving and leasing on it", m.Name, w.cfg.MigrationAdvance)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	issued := make(chan struct{}) // closed at the first range the restored cluster acknowledges
	var once sync.Once
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(k*100+i)+8000))
			for j := 0; j < 100_000_000; j++ {
				select {
				case <-stop:
					return
				default:
				}
				t := cb.Members()
				if w.reserveOn(cb, t[r.IntN(len(t))], 20_000+k*100+i, mainSeqs[r.IntN(len(mainSeqs))], 1+r.Int64N(1000)) {
					once.Do(func() { close(issued) })
				} else {
					sleepStop(stop, 20*time.Millisecond)
				}
			}
		}()
	}
	for i, ns := range []string{leaseNamespace, sfNamespace} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.leaseWorker(cb, ns, 20_000+k*100+50+i, rand.New(rand.NewPCG(seed, uint64(k*100+i)+9000)), stop)
		}()
	}
	phase := w.cfg.MigrationPhase
	select {
	case <-issued:
	case <-time.After(phase + 10*time.Second):
	}
	sleepCtx(ctx, phase)
	select {
	case <-issued:
		// The restored cluster has issued IDs: it is not empty, and a
		// restore must now be refused.
		ok, why := w.restore(ctx, cb, backup, true, rnd)
		if ok {
			m.SecondRestore = "ACCEPTED (must be refused)"
			w.log("migration %s: the second restore was ACCEPTED; reserving on", m.Name)
		} else {
			m.SecondRestore = "refused: " + why
			w.log("migration %s: the second restore was refused (%s)", m.Name, why)
		}
		sleepCtx(ctx, phase)
	default:
		m.Note = "the restored cluster issued no ID: no second restore"
	}
	close(stop)
	wg.Wait()
	m.Done = true
	return m
}

// backup takes GET /v1/backup of the main cluster, retrying for up to 30 s.
func (w *workload) backup(ctx context.Context, name string, rnd *rand.Rand) []byte {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		t := w.c.Members()
		n := t[rnd.IntN(len(t))]
		o := w.rec.invoke(checker.Op{Worker: 30_000, F: checker.FBackup, Node: n.ID, Migration: name})
		r := w.doWith(http.MethodGet, w.c.url(n, "/v1/backup"), nil, w.cfg.adminToken, "", 10*time.Second, 1<<30)
		if r.err == nil && r.status == http.StatusOK && len(r.body) > 0 {
			o.Outcome, o.Status, o.Bytes = checker.OK, r.status, len(r.body)
			w.rec.done(o)
			return r.body
		}
		classify(o, r)
		w.rec.done(o)
		sleepCtx(ctx, 300*time.Millisecond)
	}
	return nil
}

// restore sends POST /v1/restore?advance=N with the backup to cluster cb.
// The first restore retries unknown outcomes (and takes a refusal after an
// unknown attempt as its own success if the cluster has the sequences
// now); the second is the one that must be refused. It reports whether the
// cluster accepted, and otherwise why not.
func (w *workload) restore(ctx context.Context, cb *Cluster, backup []byte, second bool, rnd *rand.Rand) (bool, string) {
	deadline := time.Now().Add(30 * time.Second)
	path := fmt.Sprintf("/v1/restore?advance=%d", w.cfg.MigrationAdvance)
	unknown := false
	why := "no attempt"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		t := cb.Members()
		n := t[rnd.IntN(len(t))]
		o := w.rec.invoke(checker.Op{Worker: 30_001, F: checker.FRestore, Node: n.ID, Cluster: cb.name,
			Advance: w.cfg.MigrationAdvance, Second: second, Bytes: len(backup)})
		r := w.doWith(http.MethodPost, cb.url(n, path), backup, w.cfg.adminToken, "application/octet-stream", 15*time.Second, 64<<10)
		if r.err == nil && (r.status == http.StatusNoContent || r.status == http.StatusOK) {
			o.Outcome, o.Status = checker.OK, r.status
			w.rec.done(o)
			return true, ""
		}
		classify(o, r)
		w.rec.done(o)
		why = fmt.Sprintf("%d %s", o.Status, o.Err)
		if o.Outcome == checker.Fail {
			if second || !unknown {
				return false, why
			}
			// A refusal after an unknown attempt: that attempt may have
			// restored the cluster, which only the cluster can say.
			has, answer := w.hasSequences(ctx, cb)
			if has {
				return true, "" // an earlier unknown attempt restored it
			}
			return false, why + "; after the unknown attempts, " + answer
		}
		unknown = true
		sleepCtx(ctx, 300*time.Millisecond)
	}
	return false, why + " (gave up after 30 s)"
}

// hasSequences reports whether cluster cb knows the first main sequence,
// asking until a node answers 200 (it does) or 404 (it does not), for up to
// 20 s: right after a restore the new cluster may be electing a leader or
// re-establishing one, and a node that cannot answer says nothing either
// way. The string says what the last answer was.
func (w *workload) hasSequences(ctx context.Context, cb *Cluster) (bool, string) {
	deadline := time.Now().Add(20 * time.Second)
	last := "no answer"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, n := range cb.Members() {
			code, err := cb.call(ctx, http.MethodGet, n, "/v1/sequences/"+mainSeqs[0], nil, nil, 3*time.Second)
			switch {
			case err == nil && code == http.StatusOK:
				return true, ""
			case code == http.StatusNotFound:
				return false, fmt.Sprintf("%s answered 404 for sequence %s", n.ID, mainSeqs[0])
			case err != nil:
				last = err.Error()
			}
		}
		sleepCtx(ctx, 300*time.Millisecond)
	}
	return false, "no node said whether it has the sequences within 20 s (last: " + last + ")"
}
