package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/api"
)

// statusTable prints the cluster for people: one row per member, as each
// member sees itself (gathered by one node with GET /v1/cluster/nodes, so a
// member this machine cannot reach directly is still asked), a member that
// did not answer with why, then the disaster-recovery standby and the
// promotions (statusstandby.go; a fenced cluster says so first), then each
// member's Snowflake leases (when any member has one), then the capacity left. Each member's release
// and feature level are its own answer's; the line under the summary says
// the cluster's level (levelSummary).
func statusTable(co *clientOpts, w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	var nodes api.NodesStatus
	if err := getJSON(ctx, co, "/v1/cluster/nodes", &nodes); err != nil {
		return err
	}
	// The capacity needs a leader; the members are shown without one,
	// when they matter most, and the command still fails.
	capLeft, capErr := fetchCapacity(ctx, co)
	if capErr != nil {
		capLeft = capacity{}
	}
	if err := writeStatusTable(w, nodes, capLeft); err != nil {
		return err
	}
	if capErr != nil {
		return fmt.Errorf("capacity: %w", capErr)
	}
	return nil
}

func writeStatusTable(w io.Writer, nodes api.NodesStatus, capLeft capacity) error {
	var b strings.Builder
	sb := standbyOf(nodes)
	if sb.fence != nil {
		b.WriteString(fenceLine(sb.fence) + "\n\n")
	}
	b.WriteString(clusterSummary(nodes) + "\n" + levelSummary(nodes) + "\n\n")
	t := newTable(left("MEMBER"), left("API"), left("VOTER"), left("VERSION"), right("LEVEL"), left("STATE"), left("READY"),
		right("TERM"), right("COMMIT"), right("APPLIED"), right("LAG"), right("LAST CONTACT"),
		left("STORAGE"), right("FREE"), right("LOG"), right("SNAPSHOTS"), left("PROBLEM"))
	for _, n := range nodes.Nodes {
		st := n.Status
		if st == nil {
			t.row(n.ID, orDash(n.HTTPAddr), cellVoter(n, sb.standby), "-", "-", "unreachable", "-",
				"-", "-", "-", "-", "-", "-", "-", "-", "-", n.Error)
			continue
		}
		t.row(n.ID, orDash(n.HTTPAddr), cellVoter(n, sb.standby), cellVersion(st), cellLevel(st), st.State, cellBool(st.Ready),
			cellUint(st.Term), cellUint(st.CommitIndex), cellUint(st.AppliedIndex), cellUint(st.LagEntries),
			lastContact(*st), storageState(st.Storage), cellBytes(st.Storage.FreeBytes),
			cellBytes(st.Storage.LogBytes), cellBytes(st.Storage.SnapshotBytes), memberProblem(*st))
	}
	if err := t.write(&b); err != nil {
		return err
	}
	if err := writeStandby(&b, sb.standby); err != nil {
		return err
	}
	if err := writePromotions(&b, sb.promotions); err != nil {
		return err
	}
	if err := writeSnowflakeLeases(&b, nodes); err != nil {
		return err
	}
	if len(capLeft.Sequences) > 0 {
		b.WriteString("\n")
		st := newTable(left("SEQUENCE"), right("REMAINING"), right("LEFT"))
		for _, s := range capLeft.Sequences {
			st.row(s.Name, cellInt(s.Remaining), cellPercentLeft(s.FractionLeft, 1))
		}
		if err := st.write(&b); err != nil {
			return err
		}
	}
	if len(capLeft.Namesp) > 0 {
		b.WriteString("\n")
		nt := newTable(left("NAMESPACE"), right("YEARS LEFT"))
		for _, n := range capLeft.Namesp {
			nt.row(n.Name, strconv.FormatFloat(n.YearsLeft, 'f', 1, 64))
		}
		if err := nt.write(&b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// clusterSummary is the line above the members: who leads in which term,
// as the gathering node sees it, and how many members answered.
func clusterSummary(nodes api.NodesStatus) string {
	answered := 0
	var own *api.ClusterStatus
	for _, n := range nodes.Nodes {
		if n.Status != nil {
			answered++
		}
		if n.ID == nodes.Node {
			own = n.Status
		}
	}
	if own == nil {
		return fmt.Sprintf("cluster as %s sees it: %d of %d members answered", nodes.Node, answered, len(nodes.Nodes))
	}
	leader := "no leader"
	if own.Leader != "" {
		leader = "leader " + own.Leader
	}
	return fmt.Sprintf("cluster as %s sees it: %s, term %d; %d of %d members answered; Raft TLS %s, API TLS %s",
		nodes.Node, leader, own.Term, answered, len(nodes.Nodes), onOff(own.RaftTLS), onOff(own.APITLS))
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

// lastContact is how long ago the member heard from the leader: "-" on the
// leader itself, "never" when it never has.
func lastContact(st api.ClusterStatus) string {
	switch {
	case st.State == "Leader":
		return "-"
	case st.LastContactMs < 0:
		return "never"
	}
	return cellMs(st.LastContactMs)
}

// storageState is "ok", or the kind of write failure and for how long.
func storageState(s api.NodeStorage) string {
	if s.Healthy {
		return "ok"
	}
	kind := orDash(s.ErrorKind)
	if s.FailingForMs > 0 {
		return kind + " for " + cellMs(s.FailingForMs)
	}
	return kind
}

// memberProblem says what is wrong with a member that answered: why it is
// not ready, and its storage's error.
func memberProblem(st api.ClusterStatus) string {
	var p []string
	if !st.Ready && st.NotReady != "" {
		p = append(p, st.NotReady)
	}
	if !st.Storage.Healthy && st.Storage.Error != "" && !strings.Contains(st.NotReady, st.Storage.Error) {
		p = append(p, st.Storage.Error)
	}
	return strings.Join(p, "; ")
}

// writeSnowflakeLeases prints, after a blank line, one row per member and
// Snowflake namespace its own service serves or was told to: the worker id
// of its lease, whether it serves now, how long the lease lasts without a
// renewal, the IDs it made, and why it does not serve. Nothing when no
// member that answered has any.
func writeSnowflakeLeases(b *strings.Builder, nodes api.NodesStatus) error {
	t := newTable(left("MEMBER"), left("SNOWFLAKE"), right("WORKER"), left("SERVING"), right("LEASE LEFT"), right("ISSUED"), left("WHY NOT"))
	rows := 0
	for _, n := range nodes.Nodes {
		if n.Status == nil {
			continue
		}
		for _, sf := range n.Status.Snowflake {
			worker, left := "-", "-"
			if sf.WorkerID >= 0 {
				worker = cellInt(sf.WorkerID)
			}
			if sf.LeaseRemainingMs > 0 {
				left = cellMs(sf.LeaseRemainingMs)
			}
			t.row(n.ID, sf.Namespace, worker, cellBool(sf.Serving), left, cellInt(sf.Issued), sf.Reason)
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	b.WriteString("\n")
	return t.write(b)
}
