package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Backups that `ticketd backup --out-dir DIR` writes, one new file a run
// (issue 43, G7: the Helm chart's CronJob has no shell to make names). A
// name is
//
//	ticketd-<number>-<UTC time>.backup    ticketd-000042-20261129T061900Z.backup
//
// The number is one above the highest such file in DIR, and it, not the
// time, orders backups: --keep N keeps the N highest numbers. The time is
// for people; a clock set back (or a copied file's mtime) must not make the
// newest backup look like the oldest and prune it. Files that do not match
// the pattern are never touched, so DIR may hold anything else.
var backupName = regexp.MustCompile(`^ticketd-([0-9]{6,18})-([0-9]{8}T[0-9]{6}Z)\.backup$`)

// dirBackup is a backup file of the pattern and its number.
type dirBackup struct {
	name string
	num  int64
}

// dirBackups lists the files of dir that match the pattern, by number.
func dirBackups(dir string) ([]dirBackup, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []dirBackup
	for _, e := range entries {
		m := backupName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, dirBackup{name: e.Name(), num: n})
	}
	slices.SortFunc(out, func(a, b dirBackup) int {
		return cmp.Or(cmp.Compare(a.num, b.num), strings.Compare(a.name, b.name))
	})
	return out, nil
}

// checkBackupDir refuses a --out-dir that is not an existing directory:
// creating one would hide a mistyped path (a volume mounted elsewhere).
func checkBackupDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--out-dir %s does not exist: create it (or mount the backup volume there) first", dir)
	case err != nil:
		return fmt.Errorf("--out-dir %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("--out-dir %s is not a directory", dir)
	}
	return nil
}

// nextBackupName is the name of the next backup in dir, made at now.
func nextBackupName(dir string, now time.Time) (string, error) {
	have, err := dirBackups(dir)
	if err != nil {
		return "", err
	}
	var num int64 = 1
	if len(have) > 0 {
		num = have[len(have)-1].num + 1
	}
	return fmt.Sprintf("ticketd-%06d-%s.backup", num, now.UTC().Format("20060102T150405Z")), nil
}

// pruneBackups removes the backups of dir beyond the keep with the highest
// numbers and returns the names it removed; it never removes just, the
// backup this run wrote.
func pruneBackups(dir string, keep int, just string) ([]string, error) {
	have, err := dirBackups(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, b := range have[:max(len(have)-keep, 0)] {
		if b.name == just {
			continue
		}
		if err := os.Remove(filepath.Join(dir, b.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, b.name)
	}
	if len(removed) > 0 {
		if err := syncDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// writeFileAtomic writes data to path so that path holds either what it
// held before or all of data, also across a crash: a temporary file in the
// same directory, fsynced, renamed over path, then the directory fsynced
// so that the rename itself is on disk. With noClobber an existing path is
// an error rather than replaced.
func writeFileAtomic(path string, data []byte, noClobber bool) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".ticketd-backup-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp made it 0600, as backups hold every sequence's mark.
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if noClobber {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s exists already; not replaced", path)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
