package cluster

import (
	"io"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/metrics"
)

// raftCollector reports Raft's state at scrape time, so the gauges are never
// stale and cost nothing between scrapes.
type raftCollector struct {
	n *Node

	hasLeader, isLeader, serving, term, commitIndex, appliedIndex, lastIndex *prometheus.Desc
	lastContact, lastSnapshotIndex, voters, raftTLS                          *prometheus.Desc

	storageHealthy, storageFree, storageLog, storageSnapshots, lag *prometheus.Desc

	featureLevel, clusterFeatureLevel *prometheus.Desc
}

func newRaftCollector(n *Node) *raftCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("ticketd_raft_"+name, help, nil, nil)
	}
	return &raftCollector{
		n:                 n,
		hasLeader:         d("has_leader", "1 if this node knows a leader."),
		isLeader:          d("is_leader", "1 if this node is the Raft leader."),
		serving:           d("serving", "1 if this node serves as leader (after its Barrier)."),
		term:              d("term", "Current Raft term."),
		commitIndex:       d("commit_index", "Highest log index known to be committed."),
		appliedIndex:      d("applied_index", "Highest log index applied to the state machine."),
		lastIndex:         d("last_log_index", "Highest index in this node's log."),
		lastContact:       d("last_contact_seconds", "Seconds since a follower last heard from the leader (0 on the leader)."),
		lastSnapshotIndex: d("last_snapshot_index", "Log index of the latest snapshot."),
		voters:            d("voters", "Voters in the latest configuration."),
		raftTLS:           d("tls", "1 if this node's Raft port speaks mutual TLS, 0 if Raft traffic is plaintext."),
		lag:               d("lag_entries", "Committed entries this node has yet to apply: the highest commit index a leader has sent it less its applied index (0 on the leader once applied)."),
		storageHealthy:    prometheus.NewDesc("ticketd_storage_healthy", "0 while writes to this node's Raft log or stable store fail (a run of failures ends 5 s after the last one, with a success since); 1 otherwise.", nil, nil),
		storageFree:       prometheus.NewDesc("ticketd_storage_free_bytes", "Bytes free to ticketd on the data directory's filesystem.", nil, nil),
		storageLog:        prometheus.NewDesc("ticketd_storage_log_bytes", "Size of the Raft log file (raft.db).", nil, nil),
		storageSnapshots:  prometheus.NewDesc("ticketd_storage_snapshot_bytes", "Total size of the Raft snapshots kept in the data directory.", nil, nil),

		featureLevel:        prometheus.NewDesc("ticketd_feature_level", "The highest feature level this node's binary knows (see docs/upgrading.md).", nil, nil),
		clusterFeatureLevel: prometheus.NewDesc("ticketd_cluster_feature_level", "The cluster's feature level as this node has applied it from the log: below ticketd_feature_level while a rolling upgrade is unfinished.", nil, nil),
	}
}

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hasLeader, c.isLeader, c.serving, c.term, c.commitIndex, c.appliedIndex, c.lastIndex, c.lastContact, c.lastSnapshotIndex, c.voters, c.raftTLS, c.storageHealthy, c.storageFree, c.storageLog, c.storageSnapshots, c.lag, c.featureLevel, c.clusterFeatureLevel} {
		ch <- d
	}
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.n.raft
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	b := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	_, serving := c.n.Leadership()
	gauge(c.hasLeader, b(c.n.LeaderID() != ""))
	gauge(c.isLeader, b(r.State() == raft.Leader))
	gauge(c.serving, b(serving))
	gauge(c.term, float64(r.CurrentTerm()))
	gauge(c.commitIndex, float64(r.CommitIndex()))
	gauge(c.appliedIndex, float64(r.AppliedIndex()))
	gauge(c.lastIndex, float64(r.LastIndex()))
	contact := 0.0
	if r.State() != raft.Leader {
		if t := r.LastContact(); !t.IsZero() {
			contact = time.Since(t).Seconds()
		}
	}
	gauge(c.lastContact, contact)
	stats := r.Stats()
	if v, err := strconv.ParseUint(stats["last_snapshot_index"], 10, 64); err == nil {
		gauge(c.lastSnapshotIndex, float64(v))
	}
	gauge(c.voters, float64(c.n.voterCount()))
	gauge(c.raftTLS, b(c.n.cfg.TLS != nil))
	gauge(c.lag, float64(c.n.Lag()))
	_, failing := c.n.StorageFailure()
	gauge(c.storageHealthy, b(!failing))
	logBytes, snapBytes, free := c.n.dataDirUsage()
	if free >= 0 {
		gauge(c.storageFree, float64(free))
	}
	if logBytes >= 0 {
		gauge(c.storageLog, float64(logBytes))
	}
	gauge(c.storageSnapshots, float64(snapBytes))
	gauge(c.featureLevel, float64(c.n.ownLevel()))
	gauge(c.clusterFeatureLevel, float64(c.n.fsm.ClusterLevel()))
}

// instrumentedFSM times snapshots and counts restores; the FSM itself stays
// free of metrics.
type instrumentedFSM struct {
	*fsm.FSM
	m *metrics.Metrics
}

func (f instrumentedFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := f.FSM.Snapshot()
	if err != nil {
		return nil, err
	}
	return timedSnapshot{s, f.m}, nil
}

func (f instrumentedFSM) Restore(rc io.ReadCloser) error {
	err := f.FSM.Restore(rc)
	if err == nil {
		f.m.SnapshotRestored()
	}
	return err
}

type timedSnapshot struct {
	raft.FSMSnapshot
	m *metrics.Metrics
}

func (s timedSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	err := s.FSMSnapshot.Persist(sink)
	s.m.ObserveSnapshot(time.Since(start), err)
	return err
}
