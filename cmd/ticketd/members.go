package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/fsm"
)

// `ticketd members reconcile`: the Helm chart's scale-down hook (issue 43,
// G5; deploy/helm/DESIGN.md §3.4). It shrinks the voters named
// <prefix><ordinal> to the ordinals below --replicas, one removal at a
// time, highest ordinal first, moving leadership off a member before it is
// removed. Every step re-reads the leader's configuration, so a rerun
// continues where a failed run stopped and a run with nothing to remove
// changes nothing.
//
// Not built from §3.4: --allow-degraded (every kept voter must be Ready)
// and step 6, the grow-back after a partial shrink that a rollback needs.

const membersUsage = `usage:
  ticketd members reconcile --replicas N --id-prefix P [--addr URL,...] [--timeout D]
      removes the voters whose ID is P<ordinal> with ordinal >= N, one at a
      time, highest first (issue 43: the Helm chart's scale-down hook). A
      leader among them hands leadership first to the kept voter with the
      least lag. Before a removal it refuses, changing nothing, if a voter
      P0 .. P<N-1> is missing or not Ready; it always refuses if no voter
      matches P<ordinal>, or if the cluster's feature level is above this
      binary's (a rollback past a level rise). With nothing to remove (a
      scale-up included) it changes nothing and says so. Members that do
      not match P<ordinal> and non-voters (the standby) are never touched.
      --timeout bounds the whole run (the chart passes 10m).
`

func membersCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "reconcile" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return membersReconcileCmd([]string{"-h"}, stdout, stderr)
		}
		fmt.Fprint(stderr, membersUsage)
		if len(args) == 0 {
			return usageError{"members: want `reconcile`"}
		}
		return usageError{fmt.Sprintf("members: unknown command %q", args[0])}
	}
	return membersReconcileCmd(args[1:], stdout, stderr)
}

// errRollbackPastLevel is DESIGN §3.4 step 2's refusal.
var errRollbackPastLevel = errors.New("rollback past a feature-level rise: restore from a backup (docs/upgrading.md#going-back)")

func membersReconcileCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("members reconcile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, membersUsage)
		fs.PrintDefaults()
	}
	co := clientFlags(fs)
	replicas := fs.Int("replicas", 0, "how many voters to keep: P0 .. P<N-1> (required, at least 1)")
	prefix := fs.String("id-prefix", "", "the voters' ID before the ordinal, e.g. r-ticketd- (required)")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	const use = "usage: ticketd members reconcile --replicas N --id-prefix P [--addr URL,...] [--timeout D]"
	switch {
	case len(pos) != 0:
		return usageError{use}
	case *replicas < 1:
		return usageError{fmt.Sprintf("--replicas %d: want 1 or more\n%s", *replicas, use)}
	case *prefix == "":
		return usageError{"--id-prefix is required\n" + use}
	case strings.TrimRight(*prefix, "0123456789") != *prefix:
		return usageError{fmt.Sprintf("--id-prefix %q ends in a digit, so an ID's ordinal would be ambiguous\n%s", *prefix, use)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	r := reconciler{co: co, n: *replicas, prefix: *prefix, out: stdout}
	if err := r.run(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("members reconcile: gave up after --timeout %s: %w", *co.timeout, err)
		}
		return err
	}
	return nil
}

type reconciler struct {
	co     *clientOpts
	n      int
	prefix string
	out    io.Writer
	// noted are the members already named as left alone.
	noted map[string]bool
}

// view is the cluster as its leader sees it.
type view struct {
	leader  string
	level   int
	members []api.Member
	// status is each member's own status; nil where it did not answer.
	status map[string]*api.ClusterStatus
}

func (v view) member(id string) (api.Member, bool) {
	for _, m := range v.members {
		if m.ID == id {
			return m, true
		}
	}
	return api.Member{}, false
}

func (v view) voters() int {
	k := 0
	for _, m := range v.members {
		if m.Voter {
			k++
		}
	}
	return k
}

// healthy says whether id answered, is Ready and lags within the node's
// own --max-ready-lag (which Ready includes).
func (v view) healthy(id string) bool {
	st := v.status[id]
	return st != nil && st.Ready
}

// ordinal is the ordinal of id under prefix: the decimal digits after it,
// without a leading zero.
func ordinal(id, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') || strings.TrimLeft(rest, "0123456789") != "" {
		return 0, false
	}
	k, err := strconv.Atoi(rest)
	return k, err == nil
}

const pollEvery = 200 * time.Millisecond

// settleFor is how long a kept voter may stay not Ready before reconcile
// refuses to remove anything.
const settleFor = 30 * time.Second

// notReady is check's refusal for kept voters that are members but not
// Ready (or did not answer), which may pass.
type notReady struct{ error }

// observe asks any endpoint for every member's status, until a serving
// leader is among them or ctx ends.
func (r *reconciler) observe(ctx context.Context) (view, error) {
	var last error
	for {
		v, err := r.observeOnce(ctx)
		if err == nil {
			return v, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return view{}, fmt.Errorf("no serving leader found: %w", last)
		case <-time.After(pollEvery):
		}
	}
}

func (r *reconciler) observeOnce(ctx context.Context) (view, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var ns api.NodesStatus
	if err := getJSON(cctx, r.co, "/v1/cluster/nodes", &ns); err != nil {
		return view{}, err
	}
	v := view{status: map[string]*api.ClusterStatus{}}
	for _, n := range ns.Nodes {
		v.status[n.ID] = n.Status
		if n.Status != nil && n.Status.State == "Leader" && n.Status.Ready {
			v.leader = n.ID
			v.members = n.Status.Members
			v.level = n.Status.ClusterFeatureLevel
		}
	}
	if v.leader == "" {
		return view{}, fmt.Errorf("%s answered, but no member is a Ready leader", orDash(ns.Node))
	}
	return v, nil
}

func (r *reconciler) run(ctx context.Context) error {
	r.noted = map[string]bool{}
	removed := 0
	var unhealthySince time.Time
	for {
		v, err := r.observe(ctx)
		if err != nil {
			return err
		}
		if v.level > int(fsm.CurrentLevel) {
			return fmt.Errorf("%w: the cluster is at feature level %d, this binary knows up to %d", errRollbackPastLevel, v.level, fsm.CurrentLevel)
		}
		var targets []api.Member
		matched := 0
		for _, m := range v.members {
			k, ok := ordinal(m.ID, r.prefix)
			if ok && m.Voter {
				matched++
			}
			switch {
			case !ok:
				r.note(m.ID, fmt.Sprintf("left alone: %s (its ID is not %s<ordinal>)", m.ID, r.prefix))
			case !m.Voter:
				r.note(m.ID, fmt.Sprintf("left alone: %s (not a voter: a standby is never removed)", m.ID))
			case k >= r.n:
				targets = append(targets, m)
			}
		}
		if matched == 0 {
			// A wrong prefix would make every shrink a no-op, and the
			// StatefulSet would then delete voters nobody removed.
			return fmt.Errorf("refusing: no voter's ID is %s<ordinal>; is --id-prefix right?", r.prefix)
		}
		if len(targets) == 0 {
			// DESIGN §3.4 checks the kept voters only before a removal:
			// the hook runs on every upgrade, a scale-up's included, when
			// the new ordinals have no pods yet.
			for k := 0; k < r.n; k++ {
				if id := r.prefix + strconv.Itoa(k); !hasVoter(v, id) {
					r.note(id, fmt.Sprintf("not a voter (yet): %s; a scale-up's pod joins when it starts", id))
				}
			}
			if removed == 0 {
				fmt.Fprintf(r.out, "nothing to do: no voter %s<ordinal> has an ordinal of %d or more (%d voters)\n", r.prefix, r.n, v.voters())
			} else {
				fmt.Fprintf(r.out, "done: removed %d, %d voters left\n", removed, v.voters())
			}
			return nil
		}
		if err := r.check(v); err != nil {
			// A kept voter that is not Ready may only have missed a
			// leader change: give it settleFor, then refuse.
			var nr notReady
			if !errors.As(err, &nr) {
				return err
			}
			if unhealthySince.IsZero() {
				unhealthySince = time.Now()
			}
			if time.Since(unhealthySince) > settleFor || ctx.Err() != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(pollEvery):
			}
			continue
		}
		unhealthySince = time.Time{}
		sort.Slice(targets, func(i, j int) bool {
			a, _ := ordinal(targets[i].ID, r.prefix)
			b, _ := ordinal(targets[j].ID, r.prefix)
			return a > b
		})
		t := targets[0].ID
		if v.leader == t {
			if err := r.moveLeadership(ctx, v, t); err != nil {
				return err
			}
			continue // re-read: remove t only once another member leads
		}
		if err := r.remove(ctx, t); err != nil {
			return err
		}
		removed++
	}
}

func hasVoter(v view, id string) bool {
	m, ok := v.member(id)
	return ok && m.Voter
}

func (r *reconciler) note(id, msg string) {
	if !r.noted[id] {
		r.noted[id] = true
		fmt.Fprintln(r.out, msg)
	}
}

// check refuses a removal unless every kept voter (ordinals 0 .. N-1) is a
// voter and Ready, the voters left are at least N, and the Ready voters
// left are a quorum of the current configuration.
func (r *reconciler) check(v view) error {
	var bad []string
	missing := false
	for k := 0; k < r.n; k++ {
		id := r.prefix + strconv.Itoa(k)
		m, ok := v.member(id)
		switch {
		case !ok:
			bad, missing = append(bad, id+" is not a member"), true
		case !m.Voter:
			bad, missing = append(bad, id+" is not a voter"), true
		case !v.healthy(id):
			why := "did not answer"
			if st := v.status[id]; st != nil {
				why = "not Ready: " + orDash(st.NotReady)
			}
			bad = append(bad, id+" is "+why)
		}
	}
	if len(bad) > 0 {
		err := fmt.Errorf("refusing to remove anything, the voters to keep (%s0 .. %s%d) are not all healthy: %s",
			r.prefix, r.prefix, r.n-1, strings.Join(bad, "; "))
		if !missing {
			err = notReady{err}
		}
		return err
	}
	voters, ready := v.voters(), 0
	for _, m := range v.members {
		if m.Voter && v.healthy(m.ID) {
			ready++
		}
	}
	// One removal: the voters drop by one; the removal itself must commit
	// in the current configuration without counting the member removed.
	if voters-1 < r.n {
		return fmt.Errorf("refusing: removing one of %d voters would leave fewer than --replicas %d", voters, r.n)
	}
	if ready-1 < voters/2+1 {
		return fmt.Errorf("refusing: only %d of %d voters are Ready; a removal could lose quorum", ready, voters)
	}
	return nil
}

// moveLeadership hands leadership from t to the kept voter with the least
// lag (the lowest ordinal on a tie) and waits until that voter serves.
func (r *reconciler) moveLeadership(ctx context.Context, v view, t string) error {
	to, best := "", uint64(0)
	for k := 0; k < r.n; k++ {
		id := r.prefix + strconv.Itoa(k)
		if st := v.status[id]; st != nil && st.Ready && (to == "" || st.LagEntries < best) {
			to, best = id, st.LagEntries
		}
	}
	if to == "" {
		return fmt.Errorf("no Ready voter to keep can take over leadership from %s", t)
	}
	body, _ := json.Marshal(map[string]string{"to": to})
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	_, err := adminCall(cctx, r.co, http.MethodPost, "/v1/cluster/leader", body)
	cancel()
	if err != nil {
		return fmt.Errorf("moving leadership from %s to %s: %w", t, to, err)
	}
	if err := r.waitFor(ctx, to+" serving as leader", func(v view) bool { return v.leader == to }); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "moved leadership from %s to %s\n", t, to)
	return nil
}

// remove removes t (gone already counts as done) and waits until a leader
// serves whose configuration no longer lists t, with the kept voters Ready.
func (r *reconciler) remove(ctx context.Context, t string) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	_, err := adminCall(cctx, r.co, http.MethodDelete, "/v1/cluster/members/"+url.PathEscape(t), nil)
	cancel()
	var ae *client.APIError
	if err != nil && !(errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound) {
		return fmt.Errorf("removing %s: %w", t, err)
	}
	err = r.waitFor(ctx, t+" gone from the configuration", func(v view) bool {
		if _, ok := v.member(t); ok {
			return false
		}
		for k := 0; k < r.n; k++ {
			if !v.healthy(r.prefix + strconv.Itoa(k)) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "removed %s\n", t)
	return nil
}

func (r *reconciler) waitFor(ctx context.Context, what string, ok func(view) bool) error {
	for {
		v, err := r.observe(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok(v) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}
