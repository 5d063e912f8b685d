package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/metrics"
)

// Storage health (issue #19). hashicorp/raft logs a failed append and goes
// on: a follower whose disk is full keeps answering heartbeats, its log stops
// growing, and nothing but a log line says so. Node watches every write Raft
// makes to its log and stable store instead, so that readiness and metrics
// can tell the truth: a node whose last write failed is not ready until a
// write succeeds again.

// storageQuiet is how long writes must go without a failure before a node
// that saw one counts as healthy again. On a full disk some writes still
// succeed (bolt reuses pages freed by log compaction), so readiness that
// followed each write flapped between 503 and 200 several times a second
// (the fault suite's disk-full-leader nemesis showed it); a load balancer
// should see one clean transition each way.
const storageQuiet = 5 * time.Second

// storageHealth is the outcome of the writes to the node's storage: a run
// of failures begins with a failed write and ends once a write has
// succeeded and none has failed for storageQuiet.
type storageHealth struct {
	m   *metrics.Metrics
	now func() time.Time // time.Now; tests step it

	mu       sync.Mutex
	inRun    bool      // a run of failures has not ended
	lastErr  error     // the latest failed write's error, within the run
	kind     string    // its kind
	since    time.Time // the run's first failure
	lastFail time.Time // its latest failure
	lastOK   time.Time // the latest successful write

	onFail  func(err error, kind string) // the first failure of a run
	onClear func(down time.Duration)     // the end of a run
}

func (h *storageHealth) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// observe records one write transaction on op ("append", "delete",
// "stable") that took d and ended in err.
func (h *storageHealth) observe(op string, d time.Duration, err error) {
	kind := ""
	if err != nil {
		kind = storageErrorKind(err)
	}
	h.m.ObserveStorageWrite(op, d, kind)
	now := h.clock()
	h.mu.Lock()
	var fail func(error, string)
	if err != nil {
		if !h.inRun {
			h.inRun, h.since = true, now
			fail = h.onFail
		}
		h.lastErr, h.kind, h.lastFail = fmt.Errorf("%s: %w", op, err), kind, now
	} else {
		h.lastOK = now
	}
	clear := h.endRunLocked(now)
	h.mu.Unlock()
	if fail != nil {
		fail(err, kind)
	}
	if clear != nil {
		clear()
	}
}

// endRunLocked ends the run of failures if a write has succeeded since the
// last failure and storageQuiet has passed since it; it returns what to
// call, outside the lock, if it did. It is checked on every write and every
// read, so that an idle node recovers too.
func (h *storageHealth) endRunLocked(now time.Time) func() {
	if !h.inRun || !h.lastOK.After(h.lastFail) || now.Sub(h.lastFail) < storageQuiet {
		return nil
	}
	h.inRun = false
	down := h.lastOK.Sub(h.since)
	if h.onClear == nil {
		return nil
	}
	return func() { h.onClear(down) }
}

// problem is the run of failures in progress: the latest failed write's
// error and kind and when the run began; a nil error if there is none.
func (h *storageHealth) problem() (err error, kind string, since time.Time) {
	h.mu.Lock()
	clear := h.endRunLocked(h.clock())
	inRun, err, kind, since := h.inRun, h.lastErr, h.kind, h.since
	h.mu.Unlock()
	if clear != nil {
		clear()
	}
	if !inRun {
		return nil, "", time.Time{}
	}
	return err, kind, since
}

// storageErrorKind sorts a storage error for metrics and operators.
func storageErrorKind(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG):
		return "no_space"
	case errors.Is(err, syscall.EROFS):
		return "read_only"
	case errors.Is(err, syscall.EIO):
		return "io"
	default:
		return "other"
	}
}

// watchedLogStore is the Raft log with every write observed.
type watchedLogStore struct {
	raft.LogStore
	h *storageHealth
}

func (s watchedLogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

func (s watchedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := s.LogStore.StoreLogs(logs)
	s.h.observe("append", time.Since(start), err)
	return err
}

func (s watchedLogStore) DeleteRange(min, max uint64) error {
	start := time.Now()
	err := s.LogStore.DeleteRange(min, max)
	s.h.observe("delete", time.Since(start), err)
	return err
}

// watchedStableStore is Raft's stable store (term, vote) with every write
// observed.
type watchedStableStore struct {
	raft.StableStore
	h *storageHealth
}

func (s watchedStableStore) Set(key, val []byte) error {
	start := time.Now()
	err := s.StableStore.Set(key, val)
	s.h.observe("stable", time.Since(start), err)
	return err
}

func (s watchedStableStore) SetUint64(key []byte, val uint64) error {
	start := time.Now()
	err := s.StableStore.SetUint64(key, val)
	s.h.observe("stable", time.Since(start), err)
	return err
}

// StorageFailure is a run of failed writes to a node's storage.
type StorageFailure struct {
	Err   error     // the latest write's error
	Kind  string    // no_space, read_only, io or other
	Since time.Time // when the run began
}

// StorageFailure reports whether this node's latest write to its storage
// failed, and how.
func (n *Node) StorageFailure() (StorageFailure, bool) {
	err, kind, since := n.health.problem()
	return StorageFailure{Err: err, Kind: kind, Since: since}, err != nil
}

// storageStatus is the data directory's state for the cluster view.
func (n *Node) storageStatus() domain.Storage {
	logBytes, snapBytes, free := n.dataDirUsage()
	st := domain.Storage{Healthy: true, FreeBytes: free, LogBytes: logBytes, SnapshotBytes: snapBytes}
	if f, failing := n.StorageFailure(); failing {
		st.Healthy, st.ErrorKind, st.Error, st.FailingFor = false, f.Kind, f.Err.Error(), time.Since(f.Since)
	}
	return st
}

// dataDirUsage is what the data directory holds and has left, for metrics:
// raft.db's size, the snapshots' total size, and the bytes free to this
// process on its filesystem (-1 where unknown).
func (n *Node) dataDirUsage() (logBytes, snapshotBytes, free int64) {
	logBytes, snapshotBytes = -1, 0
	if st, err := os.Stat(filepath.Join(n.cfg.DataDir, "raft.db")); err == nil {
		logBytes = st.Size()
	}
	_ = filepath.WalkDir(filepath.Join(n.cfg.DataDir, "snapshots"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, ierr := d.Info(); ierr == nil {
				snapshotBytes += info.Size()
			}
		}
		return nil
	})
	return logBytes, snapshotBytes, freeBytes(n.cfg.DataDir)
}
