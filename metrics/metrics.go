// Package metrics defines ticketd's Prometheus metrics. Names follow
// Prometheus conventions: the ticketd_ prefix, base units (seconds), _total
// for counters. Sequence names are user data, so the sequence label is
// bounded: the first MaxSequenceLabels names get their own series, every
// later one is counted under "_other".
package metrics

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// MaxSequenceLabels bounds the number of distinct sequence label values.
const MaxSequenceLabels = 256

// OtherSequence is the label value for sequences past the bound.
const OtherSequence = "_other"

// Metrics holds every collector. A nil *Metrics is valid and records
// nothing, so components can be built without metrics in tests.
type Metrics struct {
	Registry *prometheus.Registry

	Reservations       *prometheus.CounterVec
	IDsIssued          *prometheus.CounterVec
	ReservationSeconds *prometheus.HistogramVec
	HTTPRequests       *prometheus.CounterVec

	BlocksCommitted  *prometheus.CounterVec
	BlockIDs         prometheus.Histogram
	BlockWaitSeconds prometheus.Histogram
	// StandbyWaitSeconds is the time blocks and lease answers waited for
	// the disaster-recovery standby to store their entries (issue #34).
	StandbyWaitSeconds prometheus.Histogram
	VerifySeconds      prometheus.Histogram
	VerifyFailures     prometheus.Counter
	LeaseChecks        prometheus.Counter

	BlockBatchRequests prometheus.Histogram
	SequencesEvicted   prometheus.Counter

	ApplySeconds      prometheus.Histogram
	LeaderChanges     prometheus.Counter
	SnapshotsTotal    prometheus.Counter
	SnapshotSeconds   prometheus.Histogram
	SnapshotRestores  prometheus.Counter
	InflightRejected  prometheus.Counter
	AuthFailures      *prometheus.CounterVec
	ForwardedRequests prometheus.Counter
	RESPConnections   prometheus.Gauge
	RESPAuthFailures  *prometheus.CounterVec
	AuditViolations   prometheus.Gauge
	AuditChecks       prometheus.Counter
	LeaseTimers       *prometheus.CounterVec
	TLSCertExpiry     *prometheus.GaugeVec
	TLSReloads        *prometheus.CounterVec
	StorageErrors     *prometheus.CounterVec
	StorageWrite      *prometheus.HistogramVec

	mu         sync.Mutex
	labels     map[string]struct{}
	labelsFull atomic.Bool // labels holds MaxSequenceLabels names and never changes again

	// Children of the vectors, cached: looking a child up by label values
	// hashes them every time, which on the reservation path costs more
	// than the rest of the bookkeeping.
	// Only sequences with a label of their own are cached (at most
	// MaxSequenceLabels); every other one shares otherChildren, so that
	// millions of sequences cost the metrics nothing each.
	seqChildren   sync.Map // sequence name -> *sequenceChildren
	otherOnce     sync.Once
	otherChildren *sequenceChildren
	httpChildren  sync.Map // httpKey -> prometheus.Counter
}

// httpKey names a child of HTTPRequests; the method is already bounded.
type httpKey struct {
	route, method string
	code          int
}

type sequenceChildren struct {
	ok, ids prometheus.Counter
	okTime  prometheus.Observer
}

// New creates the collectors and registers them, with Go and process
// collectors and ticketd_build_info, on a new registry.
func New(version string) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{Registry: reg, labels: map[string]struct{}{}}
	latency := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	m.Reservations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_reservations_total",
		Help: "Reservations answered by this node as leader, by sequence and outcome.",
	}, []string{"sequence", "outcome"})
	m.IDsIssued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_ids_issued_total",
		Help: "IDs handed out in successful reservations, by sequence.",
	}, []string{"sequence"})
	m.ReservationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ticketd_reservation_duration_seconds",
		Help:    "Time to answer a reservation on the leader, by outcome.",
		Buckets: latency,
	}, []string{"outcome"})
	m.HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_http_requests_total",
		Help: "HTTP requests by route, method and status code.",
	}, []string{"route", "method", "code"})
	m.BlocksCommitted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_blocks_committed_total",
		Help: "Blocks of IDs committed to this node as leader, by sequence.",
	}, []string{"sequence"})
	m.BlockIDs = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ticketd_block_size_ids",
		Help:    "Size of the blocks committed to this node as leader.",
		Buckets: prometheus.ExponentialBuckets(64, 4, 12),
	})
	m.StandbyWaitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ticketd_standby_wait_seconds",
		Help:    "Time a block or a lease answer waited on the leader for the in-sync standby to store its entry (only waits that happened).",
		Buckets: latency,
	})
	m.BlockWaitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ticketd_block_wait_seconds",
		Help:    "Time reservations waited for a block to commit (only those that waited).",
		Buckets: latency,
	})
	m.BlockBatchRequests = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ticketd_block_batch_requests",
		Help:    "Block requests (one per sequence that needed a block) committed together in one log entry by this node as leader.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	})
	m.SequencesEvicted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_issuer_sequences_evicted_total",
		Help: "Sequences the leader forgot from memory (least recently used, past its bound of cached sequences); their unused IDs became a gap.",
	})
	m.VerifySeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ticketd_leadership_check_seconds",
		Help:    "Duration of a quorum round confirming leadership.",
		Buckets: latency,
	})
	m.VerifyFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_leadership_check_failures_total",
		Help: "Quorum rounds that did not confirm leadership.",
	})
	m.LeaseChecks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_leadership_lease_checks_total",
		Help: "Leadership checks the leader answered from its lease (--lease-reads), without a quorum round.",
	})
	m.ApplySeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ticketd_raft_apply_duration_seconds",
		Help:    "Time from proposing a command to its being committed and applied on this node.",
		Buckets: latency,
	})
	m.LeaderChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_raft_leadership_changes_total",
		Help: "Times this node started or stopped serving as leader.",
	})
	m.SnapshotsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_raft_snapshots_total",
		Help: "Snapshots of the state machine persisted by this node.",
	})
	m.SnapshotSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ticketd_raft_snapshot_duration_seconds",
		Help:    "Time to persist a snapshot of the state machine.",
		Buckets: latency,
	})
	m.SnapshotRestores = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_raft_snapshot_restores_total",
		Help: "Snapshots restored into the state machine (at start, or installed from the leader).",
	})
	m.InflightRejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_http_inflight_rejected_total",
		Help: "Requests refused with 429 because too many were in flight.",
	})
	m.AuthFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_http_auth_failures_total",
		Help: "Requests refused by authentication (401) or authorization (403).",
	}, []string{"code"})
	m.RESPConnections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ticketd_resp_connections",
		Help: "Open connections of the Redis-protocol front.",
	})
	m.RESPAuthFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_resp_auth_failures_total",
		Help: "Redis-protocol commands refused by authentication (wrongpass) or authorization (noperm).",
	}, []string{"code"})
	m.ForwardedRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_http_forwarded_requests_total",
		Help: "Requests this node forwarded to the leader.",
	})
	m.AuditViolations = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ticketd_uniqueness_violations",
		Help: "Violations the last uniqueness probe found in the allocation audit (overlapping blocks, a worker id held twice). Must read 0 forever.",
	})
	m.AuditChecks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ticketd_uniqueness_checks_total",
		Help: "Uniqueness probes run on this node.",
	})
	m.LeaseTimers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_lease_timer_entries_total",
		Help: "Lease expiry and recycle entries this node proposed as leader, by operation (expire, recycle) and outcome (applied, stale, failed).",
	}, []string{"op", "outcome"})
	m.TLSCertExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ticketd_tls_certificate_expiry_timestamp_seconds",
		Help: "When the certificate in use expires (Unix seconds), by listener (raft, api). Alert well before it.",
	}, []string{"listener"})
	m.TLSReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_tls_reloads_total",
		Help: "Reloads of certificate files that changed something (ok) or could not be loaded (error; the previous certificate stays in use), by listener.",
	}, []string{"listener", "result"})
	m.StorageErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_storage_errors_total",
		Help: "Failed writes to the Raft log (op append or delete) or stable store (op stable), by kind: no_space, read_only, io (EIO, a failing disk or fsync), other.",
	}, []string{"op", "kind"})
	m.StorageWrite = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ticketd_storage_write_seconds",
		Help:    "Time of one successful write transaction on the Raft log or stable store, fsync included, by op.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"op"})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ticketd_build_info",
		Help: "Build information; the value is always 1.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(
		m.Reservations, m.IDsIssued, m.ReservationSeconds, m.HTTPRequests,
		m.BlocksCommitted, m.BlockIDs, m.BlockWaitSeconds, m.StandbyWaitSeconds, m.BlockBatchRequests, m.SequencesEvicted,
		m.VerifySeconds, m.VerifyFailures, m.LeaseChecks,
		m.ApplySeconds, m.LeaderChanges, m.SnapshotsTotal, m.SnapshotSeconds, m.SnapshotRestores,
		m.InflightRejected, m.AuthFailures, m.ForwardedRequests, m.RESPConnections, m.RESPAuthFailures, m.AuditViolations, m.AuditChecks, m.LeaseTimers,
		m.TLSCertExpiry, m.TLSReloads, m.StorageErrors, m.StorageWrite, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Register adds a collector (the cluster's Raft state collector) to the
// registry.
func (m *Metrics) Register(c prometheus.Collector) {
	if m != nil {
		m.Registry.MustRegister(c)
	}
}

// SequenceLabel returns the label value for a sequence, keeping the number
// of distinct values bounded.
func (m *Metrics) SequenceLabel(name string) string {
	if m.labelsFull.Load() {
		// The set no longer changes once full, so it is read without the
		// lock: the reservations of every sequence past the bound come
		// here, and would otherwise all take it.
		if _, ok := m.labels[name]; ok {
			return name
		}
		return OtherSequence
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.labels[name]; ok {
		return name
	}
	if len(m.labels) >= MaxSequenceLabels {
		return OtherSequence
	}
	m.labels[name] = struct{}{}
	if len(m.labels) == MaxSequenceLabels {
		m.labelsFull.Store(true) // after the last write: readers see the whole set
	}
	return name
}

// ObserveReservation records one reservation answered by the leader.
func (m *Metrics) ObserveReservation(sequence, outcome string, ids int64, d time.Duration) {
	if m == nil {
		return
	}
	if outcome == "ok" {
		sc := m.children(sequence)
		sc.ok.Inc()
		sc.ids.Add(float64(ids))
		sc.okTime.Observe(d.Seconds())
		return
	}
	label := m.SequenceLabel(sequence)
	m.Reservations.WithLabelValues(label, outcome).Inc()
	if outcome == "ok" {
		m.IDsIssued.WithLabelValues(label).Add(float64(ids))
	}
	m.ReservationSeconds.WithLabelValues(outcome).Observe(d.Seconds())
}

// children returns the cached series of a sequence's successful
// reservations.
func (m *Metrics) children(sequence string) *sequenceChildren {
	if c, ok := m.seqChildren.Load(sequence); ok {
		return c.(*sequenceChildren)
	}
	label := m.SequenceLabel(sequence)
	if label == OtherSequence {
		m.otherOnce.Do(func() { m.otherChildren = m.newSequenceChildren(OtherSequence) })
		return m.otherChildren
	}
	c, _ := m.seqChildren.LoadOrStore(sequence, m.newSequenceChildren(label))
	return c.(*sequenceChildren)
}

func (m *Metrics) newSequenceChildren(label string) *sequenceChildren {
	return &sequenceChildren{
		ok:     m.Reservations.WithLabelValues(label, "ok"),
		ids:    m.IDsIssued.WithLabelValues(label),
		okTime: m.ReservationSeconds.WithLabelValues("ok"),
	}
}

// ObserveBlockBatch records how many block requests went into one entry.
func (m *Metrics) ObserveBlockBatch(requests int) {
	if m != nil {
		m.BlockBatchRequests.Observe(float64(requests))
	}
}

// ObserveSequencesEvicted counts sequences the leader forgot from memory.
func (m *Metrics) ObserveSequencesEvicted(n int) {
	if m != nil && n > 0 {
		m.SequencesEvicted.Add(float64(n))
	}
}

// ObserveBlock records a block committed to this node as leader.
func (m *Metrics) ObserveBlock(sequence string, ids int64) {
	if m == nil {
		return
	}
	m.BlocksCommitted.WithLabelValues(m.SequenceLabel(sequence)).Inc()
	m.BlockIDs.Observe(float64(ids))
}

// ObserveStandbyWait records the time a block or lease answer waited for
// the standby.
func (m *Metrics) ObserveStandbyWait(d time.Duration) {
	if m != nil {
		m.StandbyWaitSeconds.Observe(d.Seconds())
	}
}

// ObserveBlockWait records the time a reservation waited for a block.
func (m *Metrics) ObserveBlockWait(d time.Duration) {
	if m != nil {
		m.BlockWaitSeconds.Observe(d.Seconds())
	}
}

// ObserveVerify records one leadership check round.
func (m *Metrics) ObserveVerify(d time.Duration, err error) {
	if m == nil {
		return
	}
	m.VerifySeconds.Observe(d.Seconds())
	if err != nil {
		m.VerifyFailures.Inc()
	}
}

// LeaseCheck counts a leadership check answered from the leader's lease.
func (m *Metrics) LeaseCheck() {
	if m != nil {
		m.LeaseChecks.Inc()
	}
}

// ObserveApply records one proposal's commit-and-apply time.
func (m *Metrics) ObserveApply(d time.Duration) {
	if m != nil {
		m.ApplySeconds.Observe(d.Seconds())
	}
}

// LeadershipChanged counts a change of this node's serving state.
func (m *Metrics) LeadershipChanged() {
	if m != nil {
		m.LeaderChanges.Inc()
	}
}

// ObserveSnapshot records a persisted snapshot.
func (m *Metrics) ObserveSnapshot(d time.Duration, err error) {
	if m == nil || err != nil {
		return
	}
	m.SnapshotsTotal.Inc()
	m.SnapshotSeconds.Observe(d.Seconds())
}

// SnapshotRestored counts a restored snapshot.
func (m *Metrics) SnapshotRestored() {
	if m != nil {
		m.SnapshotRestores.Inc()
	}
}

// ObserveHTTP counts one HTTP request.
func (m *Metrics) ObserveHTTP(route, method string, code int) {
	if m == nil {
		return
	}
	switch method {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS":
	default:
		method = "other" // clients choose the method: keep the label bounded
	}
	key := httpKey{route, method, code} // a struct: no string to build per request
	c, ok := m.httpChildren.Load(key)
	if !ok {
		c, _ = m.httpChildren.LoadOrStore(key, m.HTTPRequests.WithLabelValues(route, method, strconv.Itoa(code)))
	}
	c.(prometheus.Counter).Inc()
}

// RESPConnOpened and RESPConnClosed count the Redis-protocol front's open
// connections.
func (m *Metrics) RESPConnOpened() {
	if m != nil {
		m.RESPConnections.Inc()
	}
}

func (m *Metrics) RESPConnClosed() {
	if m != nil {
		m.RESPConnections.Dec()
	}
}

// RESPAuthFailure counts a Redis-protocol command refused by authentication
// or authorization; code is "wrongpass" or "noperm".
func (m *Metrics) RESPAuthFailure(code string) {
	if m != nil {
		m.RESPAuthFailures.WithLabelValues(code).Inc()
	}
}

// SetAuditViolations records the result of a uniqueness probe.
func (m *Metrics) SetAuditViolations(n int) {
	if m == nil {
		return
	}
	m.AuditChecks.Inc()
	m.AuditViolations.Set(float64(n))
}

// ObserveLeaseTimer records one expiry or recycle entry the lessor proposed.
func (m *Metrics) ObserveLeaseTimer(op, outcome string) {
	if m == nil {
		return
	}
	m.LeaseTimers.WithLabelValues(op, outcome).Inc()
}

// SetCertificateExpiry records when the certificate a listener uses expires.
func (m *Metrics) SetCertificateExpiry(listener string, notAfter time.Time) {
	if m == nil {
		return
	}
	m.TLSCertExpiry.WithLabelValues(listener).Set(float64(notAfter.Unix()))
}

// ObserveStorageWrite records one write transaction on the Raft log or
// stable store (each ends in an fsync), and counts a failed one by its kind.
func (m *Metrics) ObserveStorageWrite(op string, d time.Duration, kind string) {
	if m == nil {
		return
	}
	if kind != "" {
		m.StorageErrors.WithLabelValues(op, kind).Inc()
		return
	}
	m.StorageWrite.WithLabelValues(op).Observe(d.Seconds())
}

// ObserveTLSReload counts one reload of a listener's certificate files.
func (m *Metrics) ObserveTLSReload(listener string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.TLSReloads.WithLabelValues(listener, result).Inc()
}
