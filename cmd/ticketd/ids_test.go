package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
)

// idsCluster is a one-node cluster with the namespace orders.
func idsCluster(t *testing.T) string {
	t.Helper()
	tc := testcluster.New(t, 1, nil)
	if code, err := tc.Do(http.MethodPut, tc.URL(tc.Running()[0])+"/v1/namespaces/orders", nil, nil); err != nil || code/100 != 2 {
		t.Fatalf("create namespace: %d %v", code, err)
	}
	return "--addr=" + strings.Join(tc.URLs(), ",")
}

// idLines parses stdout as one ID a line, each above the one before.
func idLines(t *testing.T, out string, n int, after int64) []int64 {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n || !strings.HasSuffix(out, "\n") {
		t.Fatalf("printed %d lines, want %d IDs, one a line:\n%.300s", len(lines), n, out)
	}
	ids := make([]int64, n)
	for i, l := range lines {
		id, err := strconv.ParseInt(l, 10, 64)
		if err != nil || id <= after {
			t.Fatalf("line %d is %q, want an ID above %d", i+1, l, after)
		}
		ids[i], after = id, id
	}
	return ids
}

func TestIDs_OneIDALine_AndJSON(t *testing.T) {
	addr := idsCluster(t)
	code, out, errs := runCLI(t, "ids", "orders", addr)
	if code != 0 || errs != "" {
		t.Fatalf("ids orders: exit %d\n%s", code, errs)
	}
	last := idLines(t, out, 1, 0)[0]
	code, out, errs = runCLI(t, "ids", addr, "orders", "-n", "500")
	if code != 0 || errs != "" {
		t.Fatalf("ids orders -n 500: exit %d\n%s", code, errs)
	}
	ids := idLines(t, out, 500, last)
	last = ids[len(ids)-1]
	code, out, errs = runCLI(t, "ids", "orders", "-n="+strconv.Itoa(api.MaxSnowflakeIDs), "-o", "json", addr)
	if code != 0 || errs != "" {
		t.Fatalf("ids -o json: exit %d\n%s", code, errs)
	}
	var res api.SnowflakeIDs
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("-o json printed %.300s: %v", out, err)
	}
	if res.Namespace != "orders" || res.Node == "" || res.WorkerID < 0 || len(res.IDs) != api.MaxSnowflakeIDs || len(res.IDsText) != len(res.IDs) ||
		res.IDs[0] <= last || res.IDsText[0] != strconv.FormatInt(res.IDs[0], 10) {
		t.Fatalf("-o json: namespace %q node %q worker %d, %d ids, %d texts, first %d after %d",
			res.Namespace, res.Node, res.WorkerID, len(res.IDs), len(res.IDsText), res.IDs[0], last)
	}
}

// TestIDs_BadUsageOrUnknownNamespace_NonZeroExit: usage errors exit 2 before
// any node is asked; an unknown namespace exits 1 with the problem's detail
// and how to create it, and prints nothing on stdout.
func TestIDs_BadUsageOrUnknownNamespace_NonZeroExit(t *testing.T) {
	addr := idsCluster(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ids", addr}, "usage: ticketd ids NS"},
		{[]string{"ids", "a", "b", addr}, "usage: ticketd ids NS"},
		{[]string{"ids", "orders", "-n", "0", addr}, "-n must be between 1 and 10000, got 0"},
		{[]string{"ids", "orders", "-n", "10001", addr}, "-n must be between 1 and 10000, got 10001"},
		{[]string{"ids", "orders", "-o", "table", addr}, `-o "table": want json`},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, code, out, errs, c.want)
		}
	}
	code, out, errs := runCLI(t, "ids", "nope", "-n", "3", addr)
	if code != 1 || out != "" || !strings.Contains(errs, `"nope"`) || !strings.Contains(errs, "(404 from ") ||
		!strings.Contains(errs, "hint: create it with `ticketd namespaces nope --create`") {
		t.Fatalf("unknown namespace: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
