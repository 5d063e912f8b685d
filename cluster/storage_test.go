package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
)

// writtenDataDir runs a single node in a new data directory, commits a few
// hundred entries (so raft.db spans many pages) and shuts it down cleanly.
func writtenDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	n := openUnstarted(t, dir)
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	applyEventually(t, []*Node{n}, fsm.EncodeSetMember(fsm.SetMember{ID: "x", RaftAddr: "127.0.0.1:1"}), 10*time.Second)
	for i := range 300 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := n.Apply(ctx, fsm.EncodeSetMember(fsm.SetMember{ID: fmt.Sprintf("m%d", i), RaftAddr: "127.0.0.1:1", HTTPAddr: strings.Repeat("h", 200)}))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Shutdown(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A raft.db that is cut short or has garbage in the middle makes Open refuse,
// with an error that names the file, says it is damaged, and says how to
// recover; it never panics and never resets the log.
func TestOpen_DamagedRaftLog_RefusesWithWhatAndHow(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, path string){
		"truncated": func(t *testing.T, path string) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, st.Size()/3); err != nil {
				t.Fatal(err)
			}
		},
		"garbage in the middle": func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 4096))
			if _, err := f.WriteAt(junk, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		},
		"headers zeroed": func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, 8192), 0); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := writtenDataDir(t)
			path := filepath.Join(dir, "raft.db")
			damage(t, path)
			before, _ := os.ReadFile(path)
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
						t.Errorf("Open panicked on a damaged raft.db: %v", p)
					}
				}()
				var n *Node
				n, err = openOnly(t, dir)
				if err == nil {
					_ = n.Shutdown(context.Background(), false)
				}
			}()
			if err == nil {
				t.Fatal("Open accepted a damaged raft.db")
			}
			t.Log(err)
			for _, want := range []string{path, "damaged", "--join", "new --id"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Error("Open changed the damaged file")
			}
		})
	}
}

// mountTmpfs mounts a tmpfs at dir with the given options, unmounted when
// the test ends. It needs root; without it the test is skipped.
func mountTmpfs(t *testing.T, dir, opts string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a filesystem for the data directory")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

// A data directory on a full or a read-only filesystem makes Open refuse
// with an error that names the directory and the cause, before Raft has
// written anything: such a node would otherwise join and then fail every
// append.
func TestOpen_FullOrReadOnlyDataDir_Refuses(t *testing.T) {
	t.Run("full", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		mountTmpfs(t, dir, "size=1m")
		f, err := os.Create(filepath.Join(dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 64; i++ {
			if _, err = f.Write(make([]byte, 64<<10)); err != nil {
				break
			}
		}
		f.Close()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("filling the tmpfs ended with %v, want ENOSPC", err)
		}
		_, err = openOnly(t, dir)
		if err == nil || !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("Open on a full filesystem: %v", err)
		}
		t.Log(err)
	})
	t.Run("read-only", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		mountTmpfs(t, dir, "size=8m,ro")
		_, err := openOnly(t, dir)
		if err == nil || !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "read-only file system") {
			t.Fatalf("Open on a read-only filesystem: %v", err)
		}
		t.Log(err)
	})
}

// snapshottedDataDir is writtenDataDir with a snapshot taken before the
// shutdown; it returns the data directory and the snapshot's directory.
func snapshottedDataDir(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	n := openUnstarted(t, dir)
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	applyEventually(t, []*Node{n}, fsm.EncodeSetMember(fsm.SetMember{ID: "x", RaftAddr: "127.0.0.1:1"}), 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	snaps, err := filepath.Glob(filepath.Join(dir, "snapshots", "*"))
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots: %v %v", snaps, err)
	}
	return dir, snaps[0]
}

// A snapshot whose state fails its checksum, or whose metadata cannot be
// read, makes Open refuse: hashicorp/raft would pass over it (restoring an
// older state, or none) and go on.
func TestOpen_DamagedSnapshot_Refuses(t *testing.T) {
	for name, file := range map[string]string{"state": "state.bin", "metadata": "meta.json"} {
		t.Run(name, func(t *testing.T) {
			dir, snap := snapshottedDataDir(t)
			path := filepath.Join(snap, file)
			data, err := os.ReadFile(path)
			if err != nil || len(data) < 2 {
				t.Fatalf("read %s: %d bytes, %v", path, len(data), err)
			}
			if file == "meta.json" {
				data = data[:len(data)/2] // a torn write
			} else {
				data[len(data)/2] ^= 0xff // a flipped bit on disk
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			n, err := openOnly(t, dir)
			if err == nil {
				_ = n.Shutdown(context.Background(), false)
				t.Fatal("Open accepted a damaged snapshot")
			}
			for _, want := range []string{snap, "damaged", "new --id"} {
				if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
			t.Log(err)
		})
	}
}
