package server

// A node's membership: joining the cluster through --join at start (asked of
// the cluster, not decided from the node's own configuration), and keeping
// the replicated metadata's record of this node's API address. Moved out of
// server.go as it stood (issue 43, G1 and G3).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/cluster"
)

// membershipLoop asks the cluster, once at start, to have this node in its
// configuration when the node was given cfg.Join (askToJoin), and then, for
// as long as the node runs, makes sure the replicated metadata knows this
// node's API address (the leader writes its own; followers ask the leader).
//
// The ask is decided by the cluster, not by this node's own copy of the
// configuration: a node restarted on a data dir it kept after it was removed
// (a StatefulSet's retained volume after a scale-down) still finds itself in
// that copy, yet is in no configuration a leader replicates. The ask ends for
// good once answered, or once a leader replicates to this node while its
// configuration names it, which tells the same; it is never repeated while
// the node runs, so that a removal by an operator is not undone by the node
// itself. Until then the node runs Raft on whatever state it holds: it never
// bootstraps here (cluster.Open alone does, on an empty data dir and only
// from the settings), and a removed node's stale configuration wins it no
// election, since the members refuse votes from outside their own.
func (s *Server) membershipLoop(httpAdvertise string) {
	defer s.wg.Done()
	askPending := len(s.cfg.Join) > 0
	askFailures := 0
	interval := s.cfg.MetadataInterval
	if interval <= 0 {
		interval = time.Second
	}
	req := api.JoinRequest{ID: s.node.ID(), RaftAddr: s.node.RaftAddr(), HTTPAddr: httpAdvertise,
		FeatureLevel: int(s.node.FeatureLevel()), Version: s.node.Version()}
	if sb := s.cfg.Standby; sb != nil {
		req.Standby, req.StandbyBound, req.StandbyTimeoutMs = true, sb.Bound, sb.Timeout.Milliseconds()
	}
	wait := 10 * time.Millisecond
	for {
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
		wait = interval
		if askPending {
			wasMember := s.node.IsMember()
			if wasMember && s.node.LeaderID() != "" {
				// A leader replicates to this node (or it leads), and its
				// configuration, as that leader sent it, names the node:
				// the answer the ask would get.
				s.log.Info("a leader replicates to this node: it is a member")
				askPending = false
			} else if err := s.askToJoin(req); err != nil {
				askFailures++
				wait = askBackoff(interval, askFailures)
				s.log.Warn("could not ask the cluster to have this node as a member; retrying", "in", wait, "err", err)
				if !wasMember {
					continue
				}
				// A member by its own configuration (perhaps the whole
				// cluster is starting): it registers its API address
				// meanwhile, as any member does.
			} else {
				if wasMember {
					s.log.Info("the cluster's leader has this node in its configuration")
				} else {
					s.log.Info("joined the cluster")
				}
				askPending = false
			}
		}
		if !s.node.IsMember() {
			continue
		}
		if m, ok := s.node.FSM().Member(req.ID); ok && m.HTTPAddr == req.HTTPAddr && m.RaftAddr == req.RaftAddr {
			continue
		}
		lid, addr, ok := s.node.LeaderHTTPAddr()
		if !ok || lid == req.ID {
			continue // no leader yet, or we lead and record our own
		}
		if err := s.send(http.MethodPut, s.scheme+"://"+addr+"/v1/cluster/members/"+req.ID, req); err != nil {
			s.log.Warn("could not register metadata with the leader", "leader", lid, "err", err)
			wait = min(wait, 200*time.Millisecond)
		}
	}
}

// askBackoff is how long the ask waits after its nth failure in a row:
// doubling from a tenth of the metadata interval up to five intervals (100
// ms to 5 s by default), so that a node started before its cluster has a
// leader joins soon after one is elected, and a node whose cluster stays out
// of reach asks every few seconds, not in a tight loop.
func askBackoff(interval time.Duration, failures int) time.Duration {
	d := interval / 10
	for i := 1; i < failures && d < 5*interval; i++ {
		d *= 2
	}
	return min(d, 5*interval)
}

// askToJoin asks the cluster, through the first of cfg.Join that answers, to
// have this node in its configuration. The join call is the question and
// the answer in one: the leader adds the node if its configuration lacks it
// and, if the node is a member at that address already, only records its
// metadata (a standby's join likewise changes nothing for the same standby).
// Deciding both on the leader leaves no answer to go stale between asking
// and joining.
//
// A node that holds a Raft configuration asks only a cluster that shares a
// member with it (sameCluster): joining another cluster would have that
// cluster's leader overwrite this node's log with its own.
func (s *Server) askToJoin(req api.JoinRequest) error {
	own, err := s.node.Configuration()
	if err != nil {
		return err
	}
	var errs []error
	for _, u := range s.cfg.Join {
		base := strings.TrimRight(u, "/")
		if len(own) > 0 {
			if err := s.sameCluster(base, own); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", u, err))
				continue
			}
		}
		err := s.send(http.MethodPost, base+"/v1/cluster/members", req)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", u, err))
	}
	return errors.Join(errs...)
}

// sameCluster checks that the node at base knows a configuration that
// shares a member (an ID at the same Raft address) with own, this node's.
func (s *Server) sameCluster(base string, own []cluster.Peer) error {
	var st api.ClusterStatus
	if err := s.call(http.MethodGet, base+"/v1/cluster", nil, &st); err != nil {
		return err
	}
	if len(st.Members) == 0 {
		return fmt.Errorf("%s is in no cluster yet", st.Node)
	}
	for _, m := range st.Members {
		for _, p := range own {
			if m.ID == p.ID && m.RaftAddr == p.RaftAddr {
				return nil
			}
		}
	}
	return fmt.Errorf("not asking %s to add this node: its cluster shares no member with this node's Raft configuration (%s), so it is another cluster, "+
		"and joining it would overwrite this node's log; fix --join, or move this data dir away to join as a new node", st.Node, peersString(own))
}

// peersString is "id@raftaddr, ..." for a log line or an error.
func peersString(ps []cluster.Peer) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.ID + "@" + p.RaftAddr
	}
	return strings.Join(parts, ", ")
}

func (s *Server) send(method, url string, body any) error {
	return s.call(method, url, body, nil)
}

// call makes one request to another node's API with the admin token,
// sending body (if not nil) and decoding a 2xx answer into out (if not nil).
func (s *Server) call(method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(s.stopCtx, 10*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if s.cfg.Tokens != nil {
		r.Header.Set("Authorization", "Bearer "+s.cfg.Tokens.AdminToken())
	}
	resp, err := s.client.Do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(msg))
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
			return fmt.Errorf("%s %s: %w", method, url, err)
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return nil
}
