package respapi_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
)

// TICKETD.CREATE refuses the names "." and "..", as PUT /v1/sequences does
// (dot segments, which URLs and proxies resolve away), on the leader, where
// it creates through the store, and on a follower, where it forwards the
// create to the leader's HTTP API. A sequence of that name from an earlier
// release keeps reserving.
func TestGoRedis_DotNames_CreateRefused_ExistingOnesStillReserve(t *testing.T) {
	tc := newCluster(t, false)
	leader := tc.Leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for role, node := range map[string]string{"leader": leader.ID, "follower": follower(tc, leader).ID} {
		c := client(t, tc.Node(node), "", 2)
		for _, name := range []string{".", ".."} {
			err := c.Do(ctx, "TICKETD.CREATE", name).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "ERR") || !strings.Contains(err.Error(), "dot segment") {
				t.Errorf("TICKETD.CREATE %s on the %s = %v; want an ERR naming the dot segment", name, role, err)
			}
		}
	}
	var seqs api.SequenceList
	if _, err := tc.Do(http.MethodGet, tc.URL(leader)+"/v1/sequences", nil, &seqs); err != nil || len(seqs.Sequences) != 0 {
		t.Fatalf("sequences after refused creates = %+v, %v; want none", seqs, err)
	}

	// A restored backup holds "." and ".." as an earlier release made them.
	f := fsm.New()
	for i, name := range []string{".", ".."} {
		e := fsm.EncodeCreateSequence(fsm.CreateSequence{Name: name, Start: 1, Max: api.DefaultMax})
		if err, bad := f.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: e}).(error); bad {
			t.Fatal(err)
		}
	}
	var backup bytes.Buffer
	if err := f.Backup(&backup); err != nil {
		t.Fatal(err)
	}
	if status, err := tc.Do(http.MethodPost, tc.URL(leader)+"/v1/restore?advance=1", backup.Bytes(), nil); err != nil || status != http.StatusNoContent {
		t.Fatalf("restore: %d, %v", status, err)
	}
	for role, node := range map[string]string{"leader": leader.ID, "follower": follower(tc, leader).ID} {
		c := client(t, tc.Node(node), "", 2)
		for _, name := range []string{".", ".."} {
			id, err := c.Incr(ctx, name).Result()
			if err != nil || id < 2 {
				t.Errorf("INCR %s on the %s = %d, %v; want an ID above the restored mark", name, role, id, err)
			}
			if _, err := c.Get(ctx, name).Int64(); err != nil {
				t.Errorf("GET %s on the %s: %v", name, role, err)
			}
		}
	}
}
