package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// clusterInfo is the part of GET /v1/cluster the bench needs.
type clusterInfo struct {
	Leader  string `json:"leader"`
	Term    uint64 `json:"term"`
	Members []struct {
		ID       string `json:"id"`
		RaftAddr string `json:"raft_addr"`
		HTTPAddr string `json:"http_addr"`
		Voter    bool   `json:"voter"`
	} `json:"members"`
}

// runLeader waits until every target answers /readyz with 200 and all of
// them report the same leader, then prints "<id> <http_addr>". Requiring
// agreement (not just one node naming a leader) is what makes it safe to
// start measuring right after a restart: a freshly restarted node may still
// be catching up or name a stale leader.
func runLeader(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("leader", flag.ExitOnError)
	targets := fs.String("targets", "http://127.0.0.1:18081,http://127.0.0.1:18082,http://127.0.0.1:18083", "comma-separated base URLs, all must be ready")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	kind := fs.String("kind", "http", "http (ticketd nodes' API URLs) or etcd (client endpoints host:port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kind != "http" && *kind != "etcd" {
		return fmt.Errorf("--kind %q: want http or etcd", *kind)
	}
	ts, err := parseKindTargets(*kind, *targets)
	if err != nil {
		return err
	}
	tr := newTransport(2)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	once := func() (string, string, error) { return leaderOnce(ctx, client, ts) }
	if *kind == "etcd" {
		once = func() (string, string, error) { return etcdLeaderOnce(ctx, ts) }
	}
	deadline := time.Now().Add(*timeout)
	for {
		id, addr, why := once()
		if why == nil {
			fmt.Printf("%s %s\n", id, addr)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready after %s: %w", *timeout, why)
		}
		sleepUntil(ctx, time.Now().Add(200*time.Millisecond))
	}
}

// leaderOnce polls every target once; why says what is not ready yet.
func leaderOnce(ctx context.Context, client *http.Client, targets []string) (id, addr string, why error) {
	for _, t := range targets {
		if code, err := getStatus(ctx, client, t+"/readyz", nil); err != nil {
			return "", "", fmt.Errorf("%s/readyz: %w", t, err)
		} else if code != http.StatusOK {
			return "", "", fmt.Errorf("%s/readyz: status %d", t, code)
		}
		var ci clusterInfo
		if code, err := getStatus(ctx, client, t+"/v1/cluster", &ci); err != nil {
			return "", "", fmt.Errorf("%s/v1/cluster: %w", t, err)
		} else if code != http.StatusOK {
			return "", "", fmt.Errorf("%s/v1/cluster: status %d", t, code)
		}
		if ci.Leader == "" {
			return "", "", fmt.Errorf("%s reports no leader", t)
		}
		if id != "" && ci.Leader != id {
			return "", "", fmt.Errorf("nodes disagree on leader (%s vs %s)", id, ci.Leader)
		}
		id = ci.Leader
		for _, m := range ci.Members {
			if m.ID == ci.Leader {
				addr = m.HTTPAddr
			}
		}
		if addr == "" {
			return "", "", fmt.Errorf("%s: leader %s has no http_addr in members", t, ci.Leader)
		}
	}
	return id, addr, nil
}

// getStatus GETs url and, when out is non-nil and the answer is 200,
// decodes the JSON body into it.
func getStatus(ctx context.Context, client *http.Client, url string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			return 0, errors.New("bad JSON: " + err.Error())
		}
	}
	return resp.StatusCode, nil
}

// etcdLeaderOnce asks every endpoint for its status; all must answer and
// name the same leader. It returns the leader's member name and endpoint.
func etcdLeaderOnce(ctx context.Context, endpoints []string) (name, endpoint string, why error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cli, err := newEtcdClient(endpoints, time.Second)
	if err != nil {
		return "", "", err
	}
	defer cli.Close()
	var leader uint64
	for _, ep := range endpoints {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", ep, err)
		}
		if st.Leader == 0 {
			return "", "", fmt.Errorf("%s reports no leader", ep)
		}
		if leader != 0 && st.Leader != leader {
			return "", "", fmt.Errorf("endpoints disagree on the leader (%x vs %x)", leader, st.Leader)
		}
		leader = st.Leader
		if st.Header.MemberId == leader {
			endpoint = ep
		}
	}
	if endpoint == "" {
		return "", "", fmt.Errorf("leader %x is none of the endpoints", leader)
	}
	ml, err := cli.MemberList(ctx)
	if err != nil {
		return "", "", err
	}
	for _, m := range ml.Members {
		if m.ID == leader {
			return m.Name, endpoint, nil
		}
	}
	return "", "", fmt.Errorf("leader %x not in the member list", leader)
}
