// Package checker reads a jepsen history of ticketd operations and decides
// whether it kept ticketd's promises: no ID in two acknowledged ranges
// (uniqueness), every acknowledged range below the final high-water mark (no
// lost range), reservations and reads in real-time order (linearizability,
// by an exact sorted check over the whole history and by porcupine on small
// windows), and it measures availability and latency.
//
// The checkers are independent of each other and of the harness: they work
// on a History (what history.jsonl holds) and nothing else.
package checker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Operation kinds.
const (
	// FReserve is POST /v1/sequences/{name}/ranges over raw HTTP.
	FReserve = "reserve"
	// FNext is one SDK Sequence.Next call: a range of one ID.
	FNext = "next"
	// FRead is GET /v1/sequences/{name}: a linearizable read of "next".
	FRead = "read"
	// FRaise is POST /v1/sequences/{name}/raise: Count holds at_least,
	// Next the answer's next (Exhausted when it is null).
	FRaise = "raise"
	// FSnowflake is a burst of SDK Snowflake.Next calls of one generator
	// (Session) under one worker id: IDs holds what they returned, in
	// order; LeaseWorker the worker id decoded from them; Token the
	// generator's lease token when it was known for that worker id.
	FSnowflake = "snowflake"
	// FSFLease is a generator seen holding a new lease (LeaseWorker,
	// Token) at Complete: the grant completed before then.
	FSFLease = "sf-lease"
	// FAcquire is POST /v1/namespaces/{Seq}/leases with RequestID over
	// raw HTTP; Resend marks a deliberate second send of a request id
	// that was already answered ok.
	FAcquire = "acquire"
	// FRelease is DELETE /v1/namespaces/{Seq}/leases/{LeaseWorker}.
	FRelease = "release"
	// FNodeSnowflake is a request for Count server-made Snowflake IDs of
	// namespace Seq to node Node, over Protocol: IDs holds the answer, in
	// order; LeaseWorker the worker id the node named (HTTP) or the IDs
	// carry (RESP); SeqBits and WorkerBits the namespace's layout.
	FNodeSnowflake = "node-snowflake"
	// FBackup is GET /v1/backup on the main cluster, for Migration.
	FBackup = "backup"
	// FRestore is POST /v1/restore?advance=Advance on a restored cluster
	// (Cluster); Second marks a restore sent after that cluster had
	// issued IDs, which must be refused.
	FRestore = "restore"
)

// Outcomes. Unknown means the operation may or may not have taken effect
// (timeout, 503, connection lost after the request was sent): a checker may
// never count it as a failure.
const (
	OK      = "ok"
	Fail    = "fail"
	Unknown = "unknown"
)

// Op is one client operation: invoked, then completed with an outcome.
// Times are nanoseconds since the start of the run on a monotonic clock.
type Op struct {
	Type   string `json:"type"` // always "op"
	Index  int64  `json:"index"`
	Worker int    `json:"worker"`
	F      string `json:"f"`
	Node   string `json:"node,omitempty"`
	Seq    string `json:"seq"`
	// Session names the SDK Sequence object of a next: IDs of one
	// Sequence are increasing in real time, IDs of two interleave.
	Session  string `json:"session,omitempty"`
	Count    int64  `json:"count,omitempty"`
	Invoke   int64  `json:"invoke_ns"`
	Complete int64  `json:"complete_ns"`
	Outcome  string `json:"outcome"`
	// First and Last: the range of an ok reserve or next.
	First int64 `json:"first,omitempty"`
	Last  int64 `json:"last,omitempty"`
	// Next: the answer of an ok read; Exhausted when the server answered
	// next = null (every ID up to max was handed out).
	Next      int64 `json:"next,omitempty"`
	Exhausted bool  `json:"exhausted,omitempty"`
	// Final marks the reads made after the final heal, for the lost check.
	Final bool `json:"final,omitempty"`
	// Status is the HTTP status, 0 if there was none.
	Status int    `json:"status,omitempty"`
	Err    string `json:"error,omitempty"`
	// Malformed describes an ok answer that broke the API on its own
	// (wrong length, wrong sequence, non-positive ID).
	Malformed string `json:"malformed,omitempty"`

	// Workload names the workload of an operation outside the main one
	// ("many": the many-sequences workload), for its figures (Workloads)
	// and its own rows in the counts and latencies; every check goes by
	// sequence and ignores it.
	Workload string `json:"workload,omitempty"`

	// Cluster is "" for the main cluster, or the name of a cluster
	// restored from a backup of it (migration): operations on such a
	// cluster are kept out of the main cluster's checks.
	Cluster string `json:"cluster,omitempty"`
	// Migration names the restored cluster a backup was taken for.
	Migration string `json:"migration,omitempty"`
	// Leases: the request id of an acquire, the worker id and token of
	// its answer (or of the lease a release gives back), the lease's
	// expiry on the cluster's clock, the harness's wall clock (Unix ms)
	// at invocation, and the lease's TTL. The checks time a lease by the
	// TTL from its request's first invocation, on the harness's own clock;
	// histories written before TTLMs was recorded fall back to comparing
	// ExpiresMs with WallMs, which a stepped server clock makes
	// meaningless.
	RequestID   string `json:"request_id,omitempty"`
	LeaseWorker *int64 `json:"lease_worker,omitempty"`
	Token       uint64 `json:"token,omitempty"`
	ExpiresMs   int64  `json:"expires_ms,omitempty"`
	WallMs      int64  `json:"wall_ms,omitempty"`
	TTLMs       int64  `json:"ttl_ms,omitempty"`
	Resend      bool   `json:"resend,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	// IDs are a snowflake op's IDs; SeqBits and WorkerBits the
	// namespace's layout, to take them apart.
	IDs        []int64 `json:"ids,omitempty"`
	SeqBits    uint8   `json:"seq_bits,omitempty"`
	WorkerBits uint8   `json:"worker_bits,omitempty"`
	// Protocol is how a node-snowflake request went: "http" or "resp".
	Protocol string `json:"protocol,omitempty"`
	// GrantSeq is the lease a node-snowflake answer names as the one its
	// IDs were made under (lease_grant_seq: its grant's audit sequence
	// number; 0: not named, as over RESP).
	GrantSeq uint64 `json:"grant_seq,omitempty"`
	// Backup and restore: the backup's size, the restore's advance, and
	// whether the restore was sent to a cluster that had issued IDs.
	Bytes   int   `json:"bytes,omitempty"`
	Advance int64 `json:"advance,omitempty"`
	Second  bool  `json:"second,omitempty"`
}

// IsRange reports whether o is an acknowledged range (reserve or next) of
// the main cluster.
func (o *Op) IsRange() bool { return o.Cluster == "" && o.isRangeAny() }

// isRangeAny: an acknowledged range of any cluster.
func (o *Op) isRangeAny() bool {
	return o.Outcome == OK && (o.F == FReserve || o.F == FNext) && o.Malformed == ""
}

// IsRead reports whether o is an ok read of the main cluster.
func (o *Op) IsRead() bool {
	return o.Cluster == "" && o.Outcome == OK && o.F == FRead && o.Malformed == ""
}

// worker returns the lease worker id, -1 if none.
func (o *Op) worker() int64 {
	if o.LeaseWorker == nil {
		return -1
	}
	return *o.LeaseWorker
}

// Nemesis is one fault: injected at Start, healed at Healed, and the
// cluster seen healthy again (every member ready, membership as expected)
// at Recovered (0 if it was not within the bound).
type Nemesis struct {
	Type      string   `json:"type"` // always "nemesis"
	Kind      string   `json:"kind"`
	Start     int64    `json:"start_ns"`
	Healed    int64    `json:"healed_ns"`
	Recovered int64    `json:"recovered_ns,omitempty"`
	Targets   []string `json:"targets,omitempty"`
	Desc      string   `json:"desc,omitempty"`
	Err       string   `json:"error,omitempty"`
	// Readiness is every node's /readyz as it changed during a storage
	// fault, from the injection until some seconds after the heal.
	Readiness []ReadyChange `json:"readiness,omitempty"`
}

// ReadyChange is a node's /readyz answer changing: its status (0: no
// answer) and, for an error, the problem's detail.
type ReadyChange struct {
	Node   string `json:"node"`
	At     int64  `json:"at_ns"`
	Code   int    `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// End is when the fault's effect is over: recovery, or the heal if the
// cluster never recovered within the bound.
func (n *Nemesis) End() int64 { return max(n.Healed, n.Recovered) }

// Meta describes a run; it is the last line of history.jsonl.
type Meta struct {
	Type string `json:"type"` // always "meta"
	// WorkloadEnd is when the clients stopped (ns since start).
	WorkloadEnd int64             `json:"workload_end_ns"`
	Started     time.Time         `json:"started"`
	Info        map[string]string `json:"info,omitempty"`
}

// History is everything the checkers look at.
type History struct {
	Ops     []Op
	Nemeses []Nemesis
	// Audit is what the harness read of the main cluster's audit (nil in
	// a history without it).
	Audit *Audit
	Meta  Meta
}

// Load reads a history.jsonl file.
func Load(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read decodes history.jsonl content: one JSON object per line, each an op,
// a nemesis, the audit or the meta record.
func Read(r io.Reader) (*History, error) {
	h := &History{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch probe.Type {
		case "op":
			var o Op
			if err := json.Unmarshal(b, &o); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			h.Ops = append(h.Ops, o)
		case "nemesis":
			var n Nemesis
			if err := json.Unmarshal(b, &n); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			h.Nemeses = append(h.Nemeses, n)
		case "audit":
			h.Audit = &Audit{}
			if err := json.Unmarshal(b, h.Audit); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
		case "meta":
			if err := json.Unmarshal(b, &h.Meta); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
		default:
			return nil, fmt.Errorf("line %d: unknown record type %q", line, probe.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if h.Meta.WorkloadEnd == 0 {
		for i := range h.Ops {
			if !h.Ops[i].Final {
				h.Meta.WorkloadEnd = max(h.Meta.WorkloadEnd, h.Ops[i].Complete)
			}
		}
	}
	return h, nil
}
