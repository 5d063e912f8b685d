package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/api"
)

// admin calls that move whole backups do not fit the SDK's JSON calls, so
// they speak HTTP here: try each endpoint until one answers.
func adminCall(ctx context.Context, o *clientOpts, method, path string, body []byte) ([]byte, error) {
	hc, token, err := o.httpClient()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ep := range o.endpoints() {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(ep, "/")+path, rd)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			errs = append(errs, apiError(ep, resp.StatusCode, data))
			continue
		}
		if resp.StatusCode/100 != 2 {
			return nil, apiError(ep, resp.StatusCode, data)
		}
		return data, nil
	}
	return nil, fmt.Errorf("%w: %w", errNoEndpoint, errors.Join(errs...))
}

func backupCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	out := fs.String("out", "", "file to write the backup to (or --out-dir)")
	outDir := fs.String("out-dir", "", "directory to write a new backup to each run, named ticketd-<number>-<UTC time>.backup (or --out)")
	keep := fs.Int("keep", 0, "with --out-dir: keep only the N backups of this naming with the highest numbers, removing older ones (0 keeps all)")
	if _, err := flagsAnywhere(fs, args); err != nil {
		return err
	}
	const use = "usage: ticketd backup (--out FILE | --out-dir DIR [--keep N]) [--addr URL]"
	switch {
	case *out != "" && *outDir != "":
		return usageError{"--out and --out-dir are exclusive: --out writes one file (replacing it), --out-dir a new numbered file each run\n" + use}
	case *out == "" && *outDir == "":
		return usageError{use}
	case *keep < 0:
		return usageError{fmt.Sprintf("--keep %d: want 0 (keep every backup) or more", *keep)}
	case *keep > 0 && *outDir == "":
		return usageError{"--keep needs --out-dir: it prunes the backups that --out-dir writes\n" + use}
	}
	if *outDir != "" {
		if err := checkBackupDir(*outDir); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	data, err := adminCall(ctx, co, http.MethodGet, "/v1/backup", nil)
	if err != nil {
		return err
	}
	if *out != "" {
		// Never a truncated file where a good one is expected.
		if err := writeFileAtomic(*out, data, false); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d bytes to %s\n", len(data), *out)
		return nil
	}
	name, err := nextBackupName(*outDir, time.Now())
	if err != nil {
		return err
	}
	path := filepath.Join(*outDir, name)
	if err := writeFileAtomic(path, data, true); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d bytes to %s\n", len(data), path)
	if *keep == 0 {
		return nil
	}
	removed, err := pruneBackups(*outDir, *keep, name)
	for _, r := range removed {
		fmt.Fprintf(stdout, "removed %s (keeping the newest %d)\n", filepath.Join(*outDir, r), *keep)
	}
	if err != nil {
		return fmt.Errorf("the backup is written, but pruning older backups failed: %w", err)
	}
	return nil
}

func restoreCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	in := fs.String("in", "", "backup file to restore (required)")
	advance := fs.Int64("advance", 0, "lift every high-water mark by this many IDs: at least the most IDs any sequence handed out after the backup was taken (required)")
	if _, err := flagsAnywhere(fs, args); err != nil {
		return err
	}
	if *in == "" || *advance < 1 {
		return usageError{"usage: ticketd restore --in FILE --advance N [--addr URL]\n" +
			"  N must be at least the number of IDs any sequence handed out since the backup; restoring without\n" +
			"  lifting the marks would hand those IDs out again"}
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	if len(data) > api.MaxBackupBytes {
		return fmt.Errorf("%s is %d bytes; a backup may be at most %d", *in, len(data), api.MaxBackupBytes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	if _, err := adminCall(ctx, co, http.MethodPost, "/v1/restore?advance="+strconv.FormatInt(*advance, 10), data); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s with every mark lifted by %d\n", *in, *advance)
	return nil
}
