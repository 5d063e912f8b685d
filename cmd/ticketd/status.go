package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/ticketd/ticketd/api"
)

func statusCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	out := outputFlag(fs)
	if _, err := flagsAnywhere(fs, args); err != nil {
		return err
	}
	format, err := output(*out, outputTable)
	if err != nil {
		return err
	}
	if format == outputTable {
		return statusTable(co, stdout)
	}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	st, err := c.Cluster(ctx)
	if err != nil {
		return err
	}
	capLeft, err := fetchCapacity(ctx, co)
	if err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	return printJSON(stdout, struct {
		api.ClusterStatus
		Capacity capacity   `json:"capacity"`
		Nodes    []nodeView `json:"nodes"`
	}{st, capLeft, nodeViews(ctx, co, st)})
}

// nodeView is one member as it sees itself: readiness, lag and storage,
// its Snowflake leases, its release and the feature level its binary knows (both absent from a
// binary older than feature levels, which counts as the base level).
type nodeView struct {
	ID           string           `json:"id"`
	API          string           `json:"api,omitempty"`
	Version      string           `json:"version,omitempty"`
	FeatureLevel int              `json:"feature_level,omitempty"`
	State        string           `json:"state,omitempty"`
	Ready        bool             `json:"ready"`
	NotReady     string           `json:"not_ready,omitempty"`
	LagEntries   uint64           `json:"lag_entries"`
	Storage      *api.NodeStorage `json:"storage,omitempty"`
	// Snowflake is the member's own worker-id lease in each namespace its
	// Snowflake service serves (GET /v1/cluster's snowflake).
	Snowflake []api.NodeSnowflake `json:"snowflake,omitempty"`
	// Standby is true for the cluster's disaster-recovery standby: a
	// non-voter that receives the log and issues nothing (issue #34).
	Standby bool `json:"standby,omitempty"`
	// Error is why this member could not be asked.
	Error string `json:"error,omitempty"`
}

// nodeViews asks every member with a known API address for its own status,
// all at once and within ctx, so that one node that cannot store anything
// shows up even while the node that answered the cluster view is fine.
func nodeViews(ctx context.Context, co *clientOpts, st api.ClusterStatus) []nodeView {
	scheme := "http"
	if eps := co.endpoints(); len(eps) > 0 && strings.HasPrefix(eps[0], "https://") {
		scheme = "https"
	}
	views := make([]nodeView, len(st.Members))
	var wg sync.WaitGroup
	for i, m := range st.Members {
		views[i] = nodeView{ID: m.ID}
		if m.HTTPAddr == "" {
			views[i].Error = "its API address is not registered yet"
			continue
		}
		views[i].API = scheme + "://" + m.HTTPAddr
		wg.Add(1)
		go func(v *nodeView) {
			defer wg.Done()
			one := *co
			addr := v.API
			one.addr = &addr
			c, _, cancel, err := newClient(&one)
			if err != nil {
				v.Error = err.Error()
				return
			}
			defer cancel()
			defer c.Close()
			ns, err := c.Cluster(ctx)
			if err != nil {
				v.Error = err.Error()
				return
			}
			if ns.Node != v.ID {
				v.Error = fmt.Sprintf("%s answered as %q", v.API, ns.Node)
				return
			}
			v.State, v.Ready, v.NotReady, v.LagEntries, v.Storage = ns.State, ns.Ready, ns.NotReady, ns.LagEntries, &ns.Storage
			v.Version, v.FeatureLevel = ns.Version, ns.FeatureLevel
			v.Snowflake = ns.Snowflake
			v.Standby = ns.ThisNodeStandby
		}(&views[i])
	}
	wg.Wait()
	return views
}
