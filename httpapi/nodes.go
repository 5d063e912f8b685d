package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// nodeStatusTimeout bounds how long GET /v1/cluster/nodes waits for one
// member: the status page polls every second or two, and a member that
// cannot answer in this long is shown as unreachable, not waited for.
const nodeStatusTimeout = 1500 * time.Millisecond

// nodesStatus answers GET /v1/cluster/nodes: this node's own status and
// every other member's answer to GET /v1/cluster, asked at once with the
// caller's credentials (so a member refuses a token it would refuse
// directly). It serves without a leader: showing a cluster that has none is
// what it is for.
func (s *Service) nodesStatus(c echo.Context) error {
	own, err := s.ownStatus(c)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.NodesStatus{Node: own.Node, Nodes: make([]api.NodeStatus, len(own.Members))}
	auth := c.Request().Header.Get("Authorization")
	ctx, cancel := context.WithTimeout(c.Request().Context(), nodeStatusTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, m := range own.Members {
		ns := &out.Nodes[i]
		ns.ID, ns.HTTPAddr, ns.Voter = m.ID, m.HTTPAddr, m.Voter
		switch {
		case m.ID == own.Node:
			st := own
			ns.Reachable, ns.Status = true, &st
		case m.HTTPAddr == "":
			ns.Error = "its API address is not known yet (it has not registered with a leader)"
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				ns.Status, ns.Error = s.memberStatus(ctx, m.HTTPAddr, auth)
				ns.Reachable = ns.Status != nil
				ns.RoundTripMs = time.Since(start).Milliseconds()
			}()
		}
	}
	wg.Wait()
	return c.JSON(http.StatusOK, out)
}

// memberStatus asks the member at addr for GET /v1/cluster; on failure the
// string says why, in words for the status page.
func (s *Service) memberStatus(ctx context.Context, addr, auth string) (*api.ClusterStatus, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme+"://"+addr+"/v1/cluster", nil)
	if err != nil {
		return nil, err.Error()
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.transport.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Sprintf("no answer within %v", nodeStatusTimeout)
		}
		return nil, "unreachable: " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, "answer cut short: " + err.Error()
	}
	return readMemberStatus(resp.StatusCode, body)
}

// readMemberStatus reads a member's answer to GET /v1/cluster: its status
// on a 200 that decodes as one, otherwise nil and why, in words (the
// problem's detail when it sent one). Exactly one of the two is set.
func readMemberStatus(code int, body []byte) (*api.ClusterStatus, string) {
	if code != http.StatusOK {
		var p api.Problem
		if json.Unmarshal(body, &p) == nil && p.Detail != "" {
			return nil, fmt.Sprintf("answered %d: %s", code, p.Detail)
		}
		return nil, fmt.Sprintf("answered %d", code)
	}
	var st api.ClusterStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, "its answer is not a cluster status: " + err.Error()
	}
	return &st, ""
}
