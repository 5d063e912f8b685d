package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
)

// TestBinary_IDs_EveryNodePrintsItsOwnIncreasingIDs runs `ticketd ids`
// against each node of a 3-node cluster of real processes: every line is an
// ID, each node's IDs increase from one run to the next, no ID is printed
// twice across the nodes, the node that answers is the one asked (nothing
// is forwarded), and an unknown namespace exits 1 with the 404 it got.
func TestBinary_IDs_EveryNodePrintsItsOwnIncreasingIDs(t *testing.T) {
	c := newCluster(t)
	nodes := c.startStatic(3)
	all := "--addr=" + nodes[0].url() + "," + nodes[1].url() + "," + nodes[2].url()
	if out, errs, code := runCLI(t, nil, "namespaces", "orders", "--create", all); code != 0 {
		t.Fatalf("ticketd namespaces orders --create: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	seen := map[int64]string{}
	for _, n := range nodes {
		addr := "--addr=" + n.url()
		var last int64
		for _, count := range []int{1, 250, api.MaxSnowflakeIDs} {
			args := []string{"ids", "orders", addr}
			if count > 1 {
				args = append(args, "-n", strconv.Itoa(count))
			}
			out, errs, code := runCLI(t, nil, args...)
			if code != 0 {
				t.Fatalf("ticketd %q: exit %d\nstderr: %s", args, code, errs)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != count {
				t.Fatalf("ticketd %q printed %d lines, want %d", args, len(lines), count)
			}
			for i, l := range lines {
				id, err := strconv.ParseInt(l, 10, 64)
				if err != nil || id <= last {
					t.Fatalf("ticketd %q line %d is %q, want an ID above %d", args, i+1, l, last)
				}
				if by, dup := seen[id]; dup {
					t.Fatalf("ID %d printed by %s and by %s", id, by, n.id)
				}
				seen[id], last = n.id, id
			}
		}
		var res api.SnowflakeIDs
		cliJSON(t, nil, &res, "ids", "orders", "-n", "3", "-o", "json", addr)
		if res.Node != n.id || res.Namespace != "orders" || len(res.IDs) != 3 || res.IDs[0] <= last || len(res.IDsText) != 3 {
			t.Fatalf("ticketd ids -o json via %s: %+v, want 3 IDs above %d made by %s", n.id, res, last, n.id)
		}
	}

	out, errs, code := runCLI(t, nil, "ids", "nope", all)
	if code != 1 || out != "" || !strings.Contains(errs, `"nope"`) || !strings.Contains(errs, "(404 from ") {
		t.Fatalf("ticketd ids nope: exit %d\nstdout: %s\nstderr: %s\nwant exit 1 and the 404 naming the namespace", code, out, errs)
	}
	t.Logf("ticketd ids nope:\n%s", errs)
}
