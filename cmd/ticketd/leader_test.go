package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/httpapi"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// transferStore is the part of a node's store that POST /v1/cluster/leader
// uses, over a real *cluster.Node: its ID, whether it serves, where its
// leader's API is (here: the leader's transferStore API), and the transfer,
// with cluster's errors given the domain kinds the server's store gives
// them (server/store.go errorKinds). It stands in for the server's store
// until that store has TransferLeadershipTo; the rest of httpapi.Store is
// never called here.
type transferStore struct {
	httpapi.Store
	node  *cluster.Node
	peers *sync.Map // node ID -> host:port of its transferStore API
}

func (s transferStore) ID() string { return s.node.ID() }

func (s transferStore) Serving() bool { _, ok := s.node.Leadership(); return ok }

func (s transferStore) LeaderHTTPAddr() (string, string, bool) {
	id := s.node.LeaderID()
	addr, ok := s.peers.Load(id)
	if !ok {
		return id, "", false
	}
	return id, addr.(string), true
}

func (s transferStore) TransferLeadershipTo(ctx context.Context, to string) (string, error) {
	leader, err := s.node.TransferLeadershipTo(ctx, to)
	for _, k := range []struct{ sentinel, kind error }{
		{cluster.ErrMemberNotFound, domain.ErrNotFound},
		{cluster.ErrMemberConflict, domain.ErrConflict},
		{cluster.ErrMemberUnreachable, domain.ErrInvalid},
		{cluster.ErrNotLeader, domain.ErrUnavailable},
		{cluster.ErrTimeout, domain.ErrUnavailable},
		{cluster.ErrShutdown, domain.ErrUnavailable},
	} {
		if errors.Is(err, k.sentinel) {
			return "", domain.Wrap(k.kind, err)
		}
	}
	return leader, err
}

// transferAPIs serves POST /v1/cluster/leader for every node of tc, each
// over its own real node, and returns their URLs by node ID.
func transferAPIs(t *testing.T, tc *testcluster.Cluster) map[string]string {
	t.Helper()
	peers := &sync.Map{}
	urls := map[string]string{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, n := range tc.Running() {
		svc := httpapi.New(httpapi.Config{Store: transferStore{node: n.Srv.Node(), peers: peers}, Logger: quiet, RequestTimeout: 10 * time.Second})
		ts := httptest.NewServer(svc.Handler())
		t.Cleanup(ts.Close)
		peers.Store(n.ID, strings.TrimPrefix(ts.URL, "http://"))
		urls[n.ID] = ts.URL
	}
	return urls
}

// `ticketd leader transfer --to ID`, sent to a follower, is forwarded to the
// leader, which hands leadership to ID: ID then serves as leader, and the
// command says so. Asking again for the node that leads changes nothing.
func TestLeaderTransfer_NamedNodeLeads(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	urls := transferAPIs(t, tc)
	first := tc.Leader(15 * time.Second)
	var followers []*testcluster.Node
	for _, n := range tc.Running() {
		if n != first {
			followers = append(followers, n)
		}
	}
	// Through the other follower, so the request is forwarded.
	to, via := followers[0], followers[1]
	code, out, errs := runCLI(t, "leader", "transfer", "--to", to.ID, "--addr", urls[via.ID])
	if code != 0 {
		t.Fatalf("leader transfer --to %s: exit %d\n%s%s", to.ID, code, out, errs)
	}
	if want := "leadership moved from " + first.ID + " to " + to.ID + "\n"; out != want {
		t.Fatalf("leader transfer printed %q, want %q", out, want)
	}
	testkit.Eventually(t, 15*time.Second, 10*time.Millisecond, to.ID+" alone serving as leader, named by every node", func() bool {
		for _, n := range tc.Running() {
			if _, serving := n.Srv.Issuer().Serving(); serving != (n == to) || n.Srv.Node().LeaderID() != to.ID {
				return false
			}
		}
		return true
	})

	code, out, errs = runCLI(t, "leader", "transfer", "--addr", urls[first.ID], "--to", to.ID)
	if code != 0 || out != to.ID+" leads already; nothing moved\n" {
		t.Fatalf("transfer to the leader itself: exit %d, %q %s; want 0 and that nothing moved", code, out, errs)
	}
}

// Bad input is refused with a message that names what is wrong, and
// leadership stays where it was.
func TestLeaderTransfer_BadTargetsNamed(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	urls := transferAPIs(t, tc)
	l := tc.Leader(15 * time.Second)
	addr := "--addr=" + strings.Join([]string{urls["n1"], urls["n2"], urls["n3"]}, ",")

	code, _, errs := runCLI(t, "leader", "transfer", "--to", "nope", addr)
	if code != 1 || !strings.Contains(errs, `"nope" is not in the raft configuration`) {
		t.Fatalf("transfer to an unknown ID: exit %d, %q; want 1 naming it", code, errs)
	}
	for _, args := range [][]string{
		{"leader", "transfer", addr},
		{"leader", "transfer", "--to", " ", addr},
		{"leader", "transfer", "n2", "--to", "n2", addr},
		{"leader", addr},
		{"leader", "move", addr},
	} {
		code, _, errs := runCLI(t, args...)
		if code != 2 || !strings.Contains(errs, "leader") {
			t.Errorf("%q: exit %d, %q; want 2 and the usage", args, code, errs)
		}
	}
	if now := tc.Leader(15 * time.Second); now != l {
		t.Fatalf("leadership moved from %s to %s on refused requests", l.ID, now.ID)
	}
}
