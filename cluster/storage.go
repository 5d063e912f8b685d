package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

// Start-up checks of the data directory (issue #19). A node that starts on a
// damaged log would crash in bolt (a bad freelist is a panic there) or, worse,
// serve from a log that lost entries it had acknowledged; one that starts on a
// read-only or full filesystem would join the cluster and then fail every
// append while answering health checks. Each check refuses with an error that
// says what is wrong, which file, and how to recover, and none of them writes
// to the log: nothing is silently reset.

// ErrStorage marks a data directory the node refuses to start on.
var ErrStorage = errors.New("data directory unusable")

// recoverByRejoin is how an operator brings back a node whose own storage is
// lost: its state lives on in the rest of the cluster.
const recoverByRejoin = "To recover this node: stop it, move its data directory aside (keep it for " +
	"diagnosis), and start it with an empty data directory under a new --id with --join pointing at " +
	"a member's API, so that it copies the state from the cluster; then remove the old id " +
	"(ticketd remove OLD-ID). If every node's log is damaged, restore the latest backup into a new " +
	"cluster (ticketd restore)."

// checkLockTimeout bounds the wait for bolt's file lock: another process
// holding it is a ticketd already running on this data directory.
const checkLockTimeout = 2 * time.Second

// checkDataDir refuses a data directory this node cannot write to.
func checkDataDir(dir string) error {
	probe, err := os.CreateTemp(dir, ".write-check-*")
	if err == nil {
		_, err = probe.Write([]byte("ticketd write check\n"))
		if err == nil {
			err = probe.Sync()
		}
		_ = probe.Close()
		_ = os.Remove(probe.Name())
	}
	if err != nil {
		return fmt.Errorf("%w: cannot write and fsync a file in %s: %v. Raft must fsync every entry "+
			"before it counts, so the node does not start. Check that the filesystem is mounted "+
			"read-write, has free space and that the data directory belongs to the user ticketd runs as",
			ErrStorage, dir, err)
	}
	return nil
}

// checkRaftLog refuses a raft.db that bolt cannot read whole: a header, a
// freelist or a page that does not check out, or a file shorter than its
// header says. A missing file is a new node. It opens the file read-only and
// changes nothing.
func checkRaftLog(path string) (err error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: raft log %s: %v", ErrStorage, path, err)
	}
	damaged := func(what string) error {
		return fmt.Errorf("%w: raft log %s is damaged (%s); ticketd will not start on it and has changed "+
			"nothing. %s", ErrStorage, path, what, recoverByRejoin)
	}
	// bolt reports some damage by panicking, and a page past the end of
	// a cut-short file is a fault on the mapped memory: both become an
	// error here.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = damaged(fmt.Sprint(p))
		}
	}()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: checkLockTimeout})
	if errors.Is(err, bbolt.ErrTimeout) {
		return fmt.Errorf("%w: raft log %s is locked by another process: is a ticketd already running "+
			"on %s?", ErrStorage, path, filepath.Dir(path))
	}
	if err != nil {
		return damaged(err.Error())
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		if want := tx.Size(); want > st.Size() {
			return damaged(fmt.Sprintf("the file holds %d bytes but its header says %d: it was cut short", st.Size(), want))
		}
		var found []error
		for e := range tx.Check() {
			if len(found) < 3 {
				found = append(found, e)
			}
		}
		if len(found) > 0 {
			return damaged(errors.Join(found...).Error())
		}
		return nil
	})
}

// checkSnapshots refuses snapshots that Raft would skip without a word:
// hashicorp/raft passes over a snapshot whose metadata it cannot read, and
// restores the next older one when the newest fails its checksum, then
// replays the log from that older index, which the log may no longer hold.
// Each snapshot directory must have readable metadata and a state whose
// CRC matches it (reading it costs one pass over the snapshot).
func checkSnapshots(dataDir string, store raft.SnapshotStore) error {
	dir := filepath.Join(dataDir, "snapshots")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: snapshots in %s: %v", ErrStorage, dir, err)
	}
	metas, err := store.List()
	if err != nil {
		return fmt.Errorf("%w: snapshots in %s: %v", ErrStorage, dir, err)
	}
	listed := map[string]bool{}
	for _, m := range metas {
		listed[m.ID] = true
	}
	damaged := func(name, what string) error {
		return fmt.Errorf("%w: snapshot %s is damaged (%s); ticketd will not start on it and has changed "+
			"nothing (Raft would pass over it and restore an older state). %s",
			ErrStorage, filepath.Join(dir, name), what, recoverByRejoin)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasSuffix(name, ".tmp") { // .tmp: a snapshot never finished, which Raft ignores
			continue
		}
		if !listed[name] {
			var meta raft.SnapshotMeta
			data, err := os.ReadFile(filepath.Join(dir, name, "meta.json"))
			if err == nil {
				err = json.Unmarshal(data, &meta)
			}
			if err != nil {
				return damaged(name, "its meta.json: "+err.Error())
			}
			continue // readable, only beyond the number kept: Raft reaps it
		}
		_, rc, err := store.Open(name)
		if err != nil {
			return damaged(name, err.Error())
		}
		_ = rc.Close()
	}
	return nil
}
