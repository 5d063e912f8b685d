package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ticketd/ticketd/cluster"
)

// promoteCmd makes a stopped disaster-recovery standby a one-node cluster
// (issue #34). It runs on the standby's machine, offline: the cluster it
// was a standby of is gone, so there is nobody to ask.
func promoteCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("promote", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "", "the stopped standby's data directory (required)")
	id := fs.String("id", "", "the standby's --id (read from the data directory when it records one)")
	advance := fs.Int64("advance", 0, "raise every high-water mark by N instead of the recorded bound: required for a standby recorded out of sync (at least the IDs any sequence can have been given since), never below the bound")
	lostAt := fs.String("primary-lost-at", "", "when the primary region was lost by (RFC 3339, e.g. 2026-11-27T07:30:00Z): the recorded bound is trusted only if that is before the standby's horizon (the latest time its leader certified it would not go on without it, less --max-clock-skew); without it, give --advance")
	skew := fs.Duration("max-clock-skew", cluster.DefaultMaxClockSkew, "how far the primary leader's clock and the clock --primary-lost-at was read from may disagree: the horizon is the certificate's time less this")
	output := fs.String("o", "text", "text or json")
	fault := registerFaultFlag(fs)
	if _, err := flagsAnywhere(fs, args); err != nil {
		return err
	}
	if *dataDir == "" {
		return usageError{"usage: ticketd promote --data-dir DIR (--primary-lost-at TIME | --advance N) [--id ID]\n" +
			"  run it on the stopped standby once the primary region is lost; then start it with ticketd serve"}
	}
	if *skew <= 0 {
		return usageError{fmt.Sprintf("--max-clock-skew %s: must be positive", *skew)}
	}
	if *advance < 0 {
		return usageError{fmt.Sprintf("--advance %d: must not be negative", *advance)}
	}
	if *output != "text" && *output != "json" {
		return usageError{fmt.Sprintf("-o %q: want text or json", *output)}
	}
	var lost time.Time
	if *lostAt != "" {
		t, err := time.Parse(time.RFC3339Nano, *lostAt)
		if err != nil {
			return usageError{fmt.Sprintf("--primary-lost-at %q: want an RFC 3339 time, e.g. 2026-11-27T07:30:00Z", *lostAt)}
		}
		lost = t
	}
	prepare, err := promoteFaults(*fault)
	if err != nil {
		return usageError{err.Error()}
	}
	rep, err := cluster.Promote(cluster.PromoteOptions{DataDir: *dataDir, ID: *id, Advance: *advance, PrimaryLostAt: lost, MaxClockSkew: *skew, Now: time.Now(), Prepare: prepare})
	if err != nil {
		if errors.Is(err, cluster.ErrPromote) {
			return fmt.Errorf("%w\nnothing was changed in %s", err, *dataDir)
		}
		return err
	}
	p := rep.Result.Promotion
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{
			"id": rep.ID, "raft_addr": rep.RaftAddr, "last_index": rep.LastIndex, "advance": p.Advance,
			"state": p.State, "token_floor": p.TokenFloor, "sequences": rep.Result.Sequences,
			"exhausted": rep.Result.Exhausted, "held_leases": rep.Result.HeldLeases,
			"ended_leases": rep.Result.EndedLeases, "resting_namespaces": rep.Result.RestingNamespaces,
		})
	}
	fmt.Fprintf(stdout, "promoted %s (raft %s): its state up to index %d is now a one-node cluster\n", rep.ID, rep.RaftAddr, rep.LastIndex)
	fmt.Fprintf(stdout, "  standby was %s; every sequence's mark raised by %d (%d sequences)\n", p.State, p.Advance, rep.Result.Sequences)
	if !rep.CertifiedUntil.IsZero() {
		fmt.Fprintf(stdout, "  its leader certified it would not go on without it before %s; the primary, lost by then less a clock skew of %s, could not have\n", rep.CertifiedUntil.UTC().Format(time.RFC3339Nano), rep.MaxClockSkew)
	}
	if len(rep.Result.Exhausted) > 0 {
		fmt.Fprintf(stdout, "  exhausted by the advance (fewer IDs left than it): %v\n", rep.Result.Exhausted)
	}
	if rep.Result.RestingNamespaces > 0 {
		fmt.Fprintf(stdout, "  with --advance the leases cannot be trusted: %d held leases ended (their tokens no longer renew), and every worker id of %d namespaces rests its TTL plus recycle delay from when the new leader serves; later grants carry a timestamp floor above the promotion's time plus the TTL\n", rep.Result.EndedLeases, rep.Result.RestingNamespaces)
	} else {
		fmt.Fprintf(stdout, "  %d worker-id leases held: each is timed out with a full TTL, then its id rests the recycle delay, from when the new leader serves\n", rep.Result.HeldLeases)
	}
	fmt.Fprintf(stdout, "  lease fencing floor raised to %d\n", p.TokenFloor)
	fmt.Fprintf(stdout, "next: ticketd serve --id %s --data-dir %s with the same --raft-addr (it is reached at %s) as before, without --standby or --join; point clients at it; join new nodes to it\n", rep.ID, *dataDir, rep.RaftAddr)
	return nil
}
