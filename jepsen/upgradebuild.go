//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// upgradeFromFile names, in one place, the commit whose ticketd the
// upgrade run starts from (--upgrade; --upgrade-from overrides it).
const upgradeFromFile = "jepsen/upgrade-from"

var commitRe = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// readUpgradeFrom reads the commit of upgradeFromFile: its one line that is
// not empty and not a # comment.
func readUpgradeFrom(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, upgradeFromFile))
	if err != nil {
		return "", err
	}
	defer f.Close()
	var commit string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if commit != "" {
			return "", fmt.Errorf("%s names more than one commit", upgradeFromFile)
		}
		commit = line
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if !commitRe.MatchString(commit) {
		return "", fmt.Errorf("%s: %q is not a commit id", upgradeFromFile, commit)
	}
	return commit, nil
}

// buildOldTicketd builds ./cmd/ticketd of commit into
// build/jepsen/ticketd-<commit> (a production build: nothing planted) and
// returns its path. The tree comes from `git archive`, so the working tree
// and the index are never touched; the binary is kept, so a second run
// builds nothing. The old tree's go.mod may need modules the module cache
// does not have yet (the Go proxy is asked, as any build would).
func buildOldTicketd(ctx context.Context, root, commit string, logf func(string, ...any)) (string, error) {
	full, err := gitOut(ctx, root, "rev-parse", "--verify", commit+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("upgrade-from %s: %w", commit, err)
	}
	out := filepath.Join(root, "build", "jepsen", "ticketd-"+full[:12])
	if fileExists(out) {
		logf("old binary %s (commit %s): cached", out, full[:12])
		return out, nil
	}
	version, err := gitOut(ctx, root, "describe", "--tags", "--always", full)
	if err != nil {
		version = full[:12]
	}
	logf("building ticketd of commit %s (%s) into %s", full[:12], version, out)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	src, err := os.MkdirTemp("", "tjepsen-old-src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	archive := exec.CommandContext(bctx, "git", "archive", "--format=tar", full)
	archive.Dir = root
	untar := exec.CommandContext(bctx, "tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var aerr, terr bytes.Buffer
	archive.Stderr, untar.Stderr = &aerr, &terr
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", fmt.Errorf("git archive %s: %v: %s", full, err, aerr.Bytes())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("tar: %v: %s", err, terr.Bytes())
	}
	tmp := out + ".tmp"
	build := exec.CommandContext(bctx, "go", "build", "-trimpath", "-ldflags", "-X main.version="+version, "-o", tmp, "./cmd/ticketd")
	build.Dir = src
	// The old tree's own go.work (if any) and nothing of this shell's
	// module settings; no cgo, as the release builds.
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=", "GOFLAGS=")
	if o, err := build.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("go build of %s: %v\n%s", full[:12], err, o)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, nil
}

func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New("git " + strings.Join(args, " ") + ": no output")
	}
	return s, nil
}
