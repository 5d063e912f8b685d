//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The storage nemeses need every node's data directory on a filesystem of
// its own that the harness can fill and break. In process mode as root
// each identity gets a small ext4 image (sparse, in the run folder's
// disks/) mounted through a loop device on its data directory before its
// first start; a wiped or retired identity's filesystem is unmounted, and
// teardown unmounts what is left.
//
// ext4 on a loop device rather than tmpfs: `mount -o remount,ro` of a
// filesystem on which a process holds a file open for writing is refused
// by the kernel (EBUSY, whatever the filesystem), and ticketd holds
// raft.db open. A read-only filesystem under a running process comes from
// the kernel's error path (errors=remount-ro), which ext4's `abort` mount
// option takes on purpose: every later write gets EROFS. ext4 also keeps
// fsync a real write to the host disk, as the data dirs had before.
const (
	// diskSize holds a CI node's data comfortably: a node's data dir stays
	// under a few MiB with the suite's snapshot threshold (64) and
	// trailing logs (32); the filler's size in the report says how much
	// the node used.
	diskSize = 64 << 20
	// mountList lists the mount points of the run, so that the next run
	// (under the run lock) unmounts what a crashed one left.
	mountList = "/run/" + prefix + ".mounts"
)

// errNoStorageFaults: the backend cannot give a node a filesystem of its
// own.
var errNoStorageFaults = errors.New("no storage faults in this mode (needs process mode as root: a loop-mounted filesystem per node)")

// disks owns the run's node filesystems.
type disks struct {
	dir  string // run folder/disks: the images
	data string // run folder/data: the mount points, itself a shared bind mount
	mu   sync.Mutex
	mnt  map[string]string // identity -> mount point, while mounted
}

// newDisks makes run/data a shared mount (so that mounts and unmounts
// below it reach the copies of the mount table that `ip netns exec` gives
// every node: a node started before another's filesystem was mounted, or
// still holding a copy of one that was unmounted, would otherwise keep it
// alive) and clears what a crashed run left.
func newDisks(run string) (*disks, error) {
	cleanupStaleMounts()
	run, err := filepath.Abs(run)
	if err != nil {
		return nil, err
	}
	d := &disks{dir: filepath.Join(run, "disks"), data: filepath.Join(run, "data"), mnt: map[string]string{}}
	for _, p := range []string{d.dir, d.data} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	if err := d.record(d.data); err != nil {
		return nil, err
	}
	if err := syscall.Mount(d.data, d.data, "", syscall.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("bind mount %s: %w", d.data, err)
	}
	if err := syscall.Mount("", d.data, "", syscall.MS_SHARED, ""); err != nil {
		unmount(d.data)
		return nil, fmt.Errorf("make %s shared: %w", d.data, err)
	}
	return d, nil
}

// record appends a mount point to mountList before it is mounted.
func (d *disks) record(p string) error {
	f, err := os.OpenFile(mountList, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, p)
	return errors.Join(err, f.Close())
}

// cleanupStaleMounts unmounts every mount point a crashed run listed,
// deepest first (under the run lock nothing else uses them).
func cleanupStaleMounts() {
	b, err := os.ReadFile(mountList)
	if err != nil {
		return
	}
	lines := strings.Fields(string(b))
	for i := len(lines) - 1; i >= 0; i-- {
		if mounted(lines[i]) {
			fmt.Fprintf(os.Stderr, "jepsen: unmounting %s, left by an earlier run\n", lines[i])
			unmount(lines[i])
		}
	}
	_ = os.Remove(mountList)
}

// mounted reports whether p is a mount point (from /proc/self/mountinfo).
func mounted(p string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}

// unmount unmounts p, and detaches it lazily if it is busy. Bounded: one
// try each.
func unmount(p string) error {
	err := syscall.Unmount(p, 0)
	if err == nil || errors.Is(err, syscall.EINVAL) { // EINVAL: not a mount point
		return nil
	}
	if derr := syscall.Unmount(p, syscall.MNT_DETACH); derr != nil {
		return fmt.Errorf("unmount %s: %v; lazily: %w", p, err, derr)
	}
	return nil
}

func (d *disks) image(id string) string { return filepath.Join(d.dir, id+".img") }

// create makes id's filesystem (no reserved blocks: ticketd runs as root
// and would write into them) and mounts it on dir.
func (d *disks) create(id, dir string) error {
	img := d.image(id)
	f, err := os.Create(img)
	if err != nil {
		return err
	}
	err = errors.Join(f.Truncate(diskSize), f.Close())
	if err != nil {
		return err
	}
	if _, err := cmdRun(30*time.Second, "mkfs.ext4", "-q", "-F", "-m", "0", "-L", prefix, img); err != nil {
		return err
	}
	return d.mount(id, dir)
}

// mount mounts id's image on dir (created if need be).
func (d *disks) mount(id, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := d.record(dir); err != nil {
		return err
	}
	if _, err := cmdRun(30*time.Second, "mount", "-t", "ext4", "-o", "loop,errors=remount-ro", d.image(id), dir); err != nil {
		return err
	}
	d.mu.Lock()
	d.mnt[id] = dir
	d.mu.Unlock()
	return nil
}

// unmount unmounts id's filesystem (if mounted).
func (d *disks) unmount(id string) error {
	d.mu.Lock()
	dir, ok := d.mnt[id]
	delete(d.mnt, id)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	return unmount(dir)
}

// mountPoint is where id's filesystem is mounted.
func (d *disks) mountPoint(id string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dir, ok := d.mnt[id]
	if !ok {
		return "", fmt.Errorf("%s has no filesystem mounted", id)
	}
	return dir, nil
}

// remove unmounts id's filesystem and deletes its image.
func (d *disks) remove(id string) error {
	err := d.unmount(id)
	if rerr := os.Remove(d.image(id)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}

// abort makes id's filesystem read-only the way the kernel does after an
// I/O error (errors=remount-ro): every later write gets EROFS, also through
// files already open. It cannot be made writable again while mounted.
func (d *disks) abort(id string) error {
	dir, err := d.mountPoint(id)
	if err != nil {
		return err
	}
	_, err = cmdRun(10*time.Second, "mount", "-o", "remount,abort", dir)
	return err
}

// repair unmounts id's aborted filesystem, checks it (e2fsck replays the
// journal) and mounts it again; the node must be stopped.
func (d *disks) repair(id string) (string, error) {
	dir, err := d.mountPoint(id)
	if err != nil {
		return "", err
	}
	if err := d.unmount(id); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-y", d.image(id)).CombinedOutput()
	var ee *exec.ExitError
	// e2fsck: 1 = errors corrected, which a journal replay may report.
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return string(out), errors.Join(fmt.Errorf("e2fsck %s: %w", d.image(id), err), d.mount(id, dir))
	}
	return string(out), d.mount(id, dir)
}

// fillerName is the file a disk-full nemesis fills a node's filesystem
// with.
const fillerName = "jepsen-filler"

// fill writes a filler file into dir until the filesystem is full
// (ENOSPC), bounded in size and time; it returns the bytes written.
func fill(dir string, limit int64, timeout time.Duration) (int64, error) {
	f, err := os.OpenFile(filepath.Join(dir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	deadline := time.Now().Add(timeout)
	for i := 0; n < limit && time.Now().Before(deadline); i++ {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			// Fill the last blocks too, 4 KiB at a time (bounded).
			for j := 0; j < 256; j++ {
				w, err := f.Write(buf[:4096])
				n += int64(w)
				if err != nil {
					break
				}
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, fmt.Errorf("filled %d bytes without ENOSPC within %v", n, timeout)
}

// unfill removes the filler.
func unfill(dir string) error {
	err := os.Remove(filepath.Join(dir, fillerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// teardown unmounts every node filesystem, then run/data.
func (d *disks) teardown() error {
	d.mu.Lock()
	ids := make([]string, 0, len(d.mnt))
	for id := range d.mnt {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, d.unmount(id))
	}
	errs = append(errs, unmount(d.data))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_ = os.Remove(mountList)
	return nil
}
