package main

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
)

// Each member's own Snowflake leases come in a section of their own under
// the members: a member that cannot serve a namespace says why, one without
// a lease shows no worker id and no time left, and an unreachable member has
// no rows.
func TestStatusTable_SnowflakeLeases_PerMemberAndWhyNot(t *testing.T) {
	n1, n2 := member("n1", "Leader", "v0.32.0", 4, 4), member("n2", "Follower", "v0.32.0", 4, 4)
	n1.Status.Snowflake = []api.NodeSnowflake{
		{Namespace: "orders", Serving: true, WorkerID: 3, LeaseRemainingMs: 27_400, TimestampFloorMs: 1_700_000_000_000, Issued: 120_000},
		{Namespace: "users", Serving: true, WorkerID: 0, LeaseRemainingMs: 29_100, Issued: 12},
	}
	n2.Status.Snowflake = []api.NodeSnowflake{
		{Namespace: "orders", WorkerID: -1, Reason: "no worker-id lease: every worker id is held or resting"},
	}
	var b strings.Builder
	if err := writeStatusTable(&b, api.NodesStatus{Node: "n1", Nodes: []api.NodeStatus{n1, n2, unreachable("n3")}}, capacity{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	sec := sections(out)
	if len(sec) != 3 {
		t.Fatalf("want the summary, the members and the Snowflake leases; got:\n%s", out)
	}
	headers, rows := tableRows(t, sec[2])
	if got := strings.Join(headers, "|"); got != "MEMBER|SNOWFLAKE|WORKER|SERVING|LEASE LEFT|ISSUED|WHY NOT" {
		t.Fatalf("headers %q", got)
	}
	want := []map[string]string{
		{"MEMBER": "n1", "SNOWFLAKE": "orders", "WORKER": "3", "SERVING": "yes", "LEASE LEFT": "27.4s", "ISSUED": "120000", "WHY NOT": ""},
		{"MEMBER": "n1", "SNOWFLAKE": "users", "WORKER": "0", "SERVING": "yes", "LEASE LEFT": "29.1s", "ISSUED": "12", "WHY NOT": ""},
		{"MEMBER": "n2", "SNOWFLAKE": "orders", "WORKER": "-", "SERVING": "no", "LEASE LEFT": "-", "ISSUED": "0", "WHY NOT": "no worker-id lease: every worker id is held or resting"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), sec[2])
	}
	for i, w := range want {
		for k, v := range w {
			if rows[i][k] != v {
				t.Errorf("row %d %s = %q, want %q", i, k, rows[i][k], v)
			}
		}
	}
	checkGolden(t, "status-snowflake.txt", out)

	// Without any lease, no section.
	b.Reset()
	n1.Status.Snowflake, n2.Status.Snowflake = nil, nil
	if err := writeStatusTable(&b, api.NodesStatus{Node: "n1", Nodes: []api.NodeStatus{n1, n2}}, capacity{}); err != nil {
		t.Fatal(err)
	}
	if sec := sections(b.String()); len(sec) != 2 {
		t.Errorf("no Snowflake leases: want the summary and the members alone; got:\n%s", b.String())
	}
}
