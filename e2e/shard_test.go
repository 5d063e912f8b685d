package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// TestBinary_ShardNamespace_PresetWarningsInspect drives issue #16's
// commands against a real process: `namespaces NS --create --preset
// instagram` makes a shard namespace, a preset that does not exist is
// refused naming it, `--horizon-years` beyond the layout's life prints a
// warning (and still creates the namespace), and `inspect --namespace NS
// ID` names the shard of an ID.
func TestBinary_ShardNamespace_PresetWarningsInspect(t *testing.T) {
	c := newCluster(t)
	n := authNode(t, c, "n1")
	admin := []string{"TICKETD_ADDR=" + n.url(), "TICKETD_TOKEN=" + e2eAdmin}

	out, errOut, code := runCLI(t, admin, "namespaces", "posts", "--create", "--preset", "instagram")
	var ns api.NamespaceCreated
	if code != 0 || json.Unmarshal([]byte(out), &ns) != nil || ns.WorkerRole != "shard" || ns.WorkerBits != 13 || ns.SequenceBits != 10 || len(ns.Warnings) != 0 || strings.Contains(errOut, "warning") {
		t.Fatalf("namespaces posts --create --preset instagram: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, admin, "namespaces", "x", "--create", "--preset", "twitter"); code == 0 || !strings.Contains(errOut, "names no preset") {
		t.Fatalf("an unknown preset: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, admin, "namespaces", "posts", "--preset", "instagram"); code == 0 || !strings.Contains(errOut, "usage") {
		t.Fatalf("--preset without --create: exit %d, %s", code, errOut)
	}
	out, errOut, code = runCLI(t, admin, "namespaces", "events", "--create", "--horizon-years", "100")
	if code != 0 || !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "within its horizon of 100 years") || !strings.Contains(out, `"horizon_years":100`) {
		t.Fatalf("a layout that runs out within its horizon: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	ms := time.Now().UnixMilli() - ns.EpochMs
	id := ms<<23 | 17<<10 | 5
	out, errOut, code = runCLI(t, admin, "inspect", "--namespace", "posts", strconv.FormatInt(id, 10))
	var in api.SnowflakeInspection
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in.Shard == nil || *in.Shard != 17 || in.Sequence != 5 || !strings.Contains(errOut, "shard 17, sequence 5") {
		t.Fatalf("inspect --namespace posts %d: exit %d\nstdout: %s\nstderr: %s", id, code, out, errOut)
	}
}
