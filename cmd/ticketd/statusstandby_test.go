package main

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
)

// standbyMember is the standby's own answer: a non-voter that knows its
// record from the log, without the leader's view of its replication.
func standbyMember(id string, sb api.StandbyStatus) api.NodeStatus {
	n := member(id, "Follower", "v0.33.0", 4, 4)
	n.HTTPAddr, n.Voter = "10.9.0.1:8080", false
	n.Status.Node, n.Status.ThisNodeStandby = id, true
	sb.Seen = nil
	n.Status.Standby = &sb
	return n
}

// withStandby gives a member's answer the standby's record; the leader's
// also what it sees of its replication.
func withStandby(n api.NodeStatus, sb api.StandbyStatus, seen *api.StandbySeen) api.NodeStatus {
	sb.Seen = seen
	n.Status.Standby = &sb
	return n
}

// The standby shows in the members table as "standby" (a non-voter of its
// own kind, even when it does not answer), and in a section of its own with
// its recorded state and the leader's view of its replication; with no
// leader answering, the replication reads "-".
func TestStatusTable_Standby_StateBoundAndTheLeadersView(t *testing.T) {
	sb := api.StandbyStatus{ID: "dr", State: api.StandbyOutOfSync, Bound: 10_000_000, TimeoutMs: 10_000,
		SinceIndex: 812, Since: "2026-11-27T06:00:00Z", Reason: "no progress for 10s with entries it lacks", OutOfSyncCount: 2}
	seen := &api.StandbySeen{AckIndex: 700, LagEntries: 212, LastContactMs: 10_400, LastProgressMs: 31_200, CertifiedUntil: "2026-11-27T05:59:58.5Z"}
	n1 := withStandby(member("n1", "Leader", "v0.33.0", 4, 4), sb, seen)
	n2 := withStandby(member("n2", "Follower", "v0.33.0", 4, 4), sb, nil)
	var b strings.Builder
	if err := writeStatusTable(&b, api.NodesStatus{Node: "n2", Nodes: []api.NodeStatus{n1, n2, standbyMember("dr", sb)}}, capacity{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	sec := sections(out)
	if len(sec) != 3 {
		t.Fatalf("want the summary, the members and the standby; got:\n%s", out)
	}
	_, members := tableRows(t, sec[1])
	for i, want := range []string{"yes", "yes", "standby"} {
		if members[i]["VOTER"] != want {
			t.Errorf("member %s VOTER %q, want %q", members[i]["MEMBER"], members[i]["VOTER"], want)
		}
	}
	headers, rows := tableRows(t, sec[2])
	if got := strings.Join(headers, "|"); got != "STANDBY|STATE|BOUND|TIMEOUT|SINCE INDEX|SINCE|OUT OF SYNC|ACK INDEX|LAG|LAST PROGRESS|CERTIFIED UNTIL|REASON" {
		t.Fatalf("headers %q", got)
	}
	want := map[string]string{"STANDBY": "dr", "STATE": "out-of-sync", "BOUND": "10000000", "TIMEOUT": "10s", "SINCE INDEX": "812",
		"SINCE": "2026-11-27T06:00:00Z", "OUT OF SYNC": "2", "ACK INDEX": "700", "LAG": "212", "LAST PROGRESS": "31.2s",
		"CERTIFIED UNTIL": "2026-11-27T05:59:58.5Z", "REASON": "no progress for 10s with entries it lacks"}
	if len(rows) != 1 {
		t.Fatalf("%d standby rows, want 1", len(rows))
	}
	for k, v := range want {
		if rows[0][k] != v {
			t.Errorf("standby %s = %q, want %q", k, rows[0][k], v)
		}
	}
	checkGolden(t, "status-standby.txt", out)

	// No leader answered (n1 down, the standby too): the record from a
	// follower, no replication to show; the standby still reads "standby".
	b.Reset()
	down := unreachable("dr")
	down.Voter = false
	if err := writeStatusTable(&b, api.NodesStatus{Node: "n2", Nodes: []api.NodeStatus{unreachable("n1"), n2, down}}, capacity{}); err != nil {
		t.Fatal(err)
	}
	sec = sections(b.String())
	_, members = tableRows(t, sec[1])
	if members[2]["VOTER"] != "standby" {
		t.Errorf("unreachable standby VOTER %q, want standby", members[2]["VOTER"])
	}
	_, rows = tableRows(t, sec[2])
	if r := rows[0]; r["STATE"] != "out-of-sync" || r["ACK INDEX"] != "-" || r["LAG"] != "-" || r["LAST PROGRESS"] != "-" || r["CERTIFIED UNTIL"] != "-" {
		t.Errorf("standby without the leader's answer: %v", r)
	}

	// A new leader that has not heard from the standby yet: "never".
	b.Reset()
	fresh := withStandby(member("n1", "Leader", "v0.33.0", 4, 4), sb, &api.StandbySeen{LagEntries: 5, LastContactMs: -1, LastProgressMs: -1})
	if err := writeStatusTable(&b, api.NodesStatus{Node: "n1", Nodes: []api.NodeStatus{fresh}}, capacity{}); err != nil {
		t.Fatal(err)
	}
	_, rows = tableRows(t, sections(b.String())[2])
	if r := rows[0]; r["LAST PROGRESS"] != "never" || r["LAG"] != "5" || r["CERTIFIED UNTIL"] != "-" {
		t.Errorf("standby not heard from in this term: %v", r)
	}

	// Without a standby, no section and no "standby" member.
	b.Reset()
	n1.Status.Standby, n2.Status.Standby = nil, nil
	if err := writeStatusTable(&b, api.NodesStatus{Node: "n1", Nodes: []api.NodeStatus{n1, n2}}, capacity{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "STANDBY") || strings.Contains(b.String(), "standby") {
		t.Errorf("no standby, yet:\n%s", b.String())
	}
}

// A fenced cluster says so before anything else, and the promotions this
// data went through have a section of their own.
func TestStatusTable_Fenced_SaysSoFirst_AndPromotions(t *testing.T) {
	fence := &api.Fence{Standby: "dr", Index: 901, At: "2026-11-27T06:05:00Z", Reason: "ticketd-promoted: dr"}
	n1, n2 := member("n1", "Leader", "v0.33.0", 4, 4), member("n2", "Follower", "v0.33.0", 4, 4)
	n2.Status.Fence = fence // n1 has not applied it yet: a follower's answer is enough
	promos := []api.Promotion{{Standby: "old-dr", AtIndex: 40, Advance: 1_000_000_000_000, State: api.StandbyOutOfSync, TokenFloor: 12, At: "2026-01-02T03:04:05Z"}}
	n1.Status.Promotions, n2.Status.Promotions = promos, promos
	var b strings.Builder
	if err := writeStatusTable(&b, api.NodesStatus{Node: "n1", Nodes: []api.NodeStatus{n1, n2}}, capacity{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	sec := sections(out)
	const wantFence = "FENCED: standby dr was promoted (recorded at index 901, 2026-11-27T06:05:00Z: ticketd-promoted: dr); this cluster serves nothing: point clients at the promoted node"
	if sec[0] != wantFence {
		t.Errorf("first section %q, want %q", sec[0], wantFence)
	}
	if len(sec) != 4 {
		t.Fatalf("want the fence, the summary, the members and the promotions; got:\n%s", out)
	}
	headers, rows := tableRows(t, sec[3])
	if got := strings.Join(headers, "|"); got != "PROMOTED|AT INDEX|ADVANCE|STATE THEN|TOKEN FLOOR|AT" {
		t.Fatalf("headers %q", got)
	}
	if r := rows[0]; r["PROMOTED"] != "old-dr" || r["AT INDEX"] != "40" || r["ADVANCE"] != "1000000000000" || r["STATE THEN"] != "out-of-sync" ||
		r["TOKEN FLOOR"] != "12" || r["AT"] != "2026-01-02T03:04:05Z" {
		t.Errorf("promotion row %v", r)
	}
	checkGolden(t, "status-fenced.txt", out)
}
