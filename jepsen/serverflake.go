//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// The server-made Snowflake workload (issue #32): workers ask random nodes
// for IDs of namespace jep-nodesf, over HTTP (POST /v1/namespaces/{ns}/ids)
// and over the Redis protocol (TICKETD.SNOWFLAKE ns count), each request a
// node-snowflake operation with the node that answered, its IDs and the
// worker id they carry. Every node makes them from its own worker-id lease
// (holder ticketd/<node>); short leases and few worker ids make worker ids
// change hands among the nodes under kills, pauses, partitions and clock
// steps. The audit tail reads the grants of the namespace and the lease
// listings read their timestamp floors, for checker.CheckNodeSnowflake.
const (
	nodesfNamespace = "jep-nodesf"
	nodesfTTLMs     = 3000
	nodesfRecycleMs = 6000
	// nodesfMaxCount bounds one request's count (1..nodesfMaxCount).
	nodesfMaxCount = 100
	// respPort is where process-mode nodes listen for the Redis protocol
	// (with --server-snowflake-workers; in their own namespaces, so one
	// port serves every node).
	respPort = 6379
)

// setupNodeSnowflake creates the namespace and reads its layout.
func (w *workload) setupNodeSnowflake(ctx context.Context) error {
	if w.cfg.ServerSnowflakeWorkers <= 0 {
		return nil
	}
	if err := w.createNamespace(ctx, nodesfNamespace, api.NamespaceRequest{LeaseTTLMs: ptr(int64(nodesfTTLMs)),
		RecycleDelayMs: ptr(int64(nodesfRecycleMs)), MaxWorkers: ptr(int64(w.cfg.ServerSnowflakeMaxWorkers))}); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, n := range w.c.Members() {
			var ns api.Namespace
			if _, err := w.c.call(ctx, http.MethodGet, n, "/v1/namespaces/"+nodesfNamespace, nil, &ns, 3*time.Second); err != nil {
				last = err
				continue
			}
			if ns.WorkerBits == 0 || ns.TickMs <= 0 {
				return fmt.Errorf("namespace %s: layout %+v", nodesfNamespace, ns)
			}
			w.nodesfLayout = ns
			return nil
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return fmt.Errorf("read namespace %s: %v", nodesfNamespace, last)
}

// startNodeSnowflake starts the workers: one request after another, each to
// a random node, half of them over the Redis protocol where the nodes
// listen for it.
func (w *workload) startNodeSnowflake(spawn func(func(int, *rand.Rand))) {
	for i := 0; i < w.cfg.ServerSnowflakeWorkers; i++ {
		spawn(func(worker int, rnd *rand.Rand) {
			w.loop(func() bool {
				n := w.pick(rnd)
				count := 1 + rnd.IntN(nodesfMaxCount)
				if addr := w.c.respHostPort(n); addr != "" && rnd.IntN(2) == 0 {
					return w.nodeSnowflakeRESP(worker, n, addr, count)
				}
				return w.nodeSnowflakeHTTP(worker, n, count)
			}, rnd)
		})
	}
	for i := 0; i < w.cfg.ServerSnowflakeLeaseWorkers; i++ {
		spawn(func(worker int, rnd *rand.Rand) { w.leaseWorker(w.c, nodesfNamespace, worker, rnd, w.stop) })
	}
}

func (w *workload) nodesfOp(worker int, n *Node, protocol string, count int) *checker.Op {
	return w.rec.invoke(checker.Op{Worker: worker, F: checker.FNodeSnowflake, Node: n.ID, Seq: nodesfNamespace, Protocol: protocol,
		Count: int64(count), SeqBits: w.nodesfLayout.SequenceBits, WorkerBits: w.nodesfLayout.WorkerBits})
}

// nodeSnowflakeHTTP is one POST /v1/namespaces/{ns}/ids to node n.
func (w *workload) nodeSnowflakeHTTP(worker int, n *Node, count int) bool {
	body, _ := json.Marshal(api.SnowflakeIDsRequest{Count: ptr(int64(count))})
	o := w.nodesfOp(worker, n, "http", count)
	r := w.do(http.MethodPost, w.c.url(n, "/v1/namespaces/"+nodesfNamespace+"/ids"), body)
	if r.err == nil && r.status == http.StatusOK {
		o.Outcome, o.Status = checker.OK, r.status
		var a api.SnowflakeIDs
		if err := json.Unmarshal(r.body, &a); err != nil {
			o.Malformed = "undecodable: " + shortBody(r.body)
		} else {
			wk := a.WorkerID
			o.IDs, o.LeaseWorker, o.GrantSeq = a.IDs, &wk, a.LeaseGrantSeq
			o.Malformed = w.nodesfMalformed(o, n, a)
		}
	} else {
		classify(o, r)
	}
	w.rec.done(o)
	return o.Outcome == checker.OK
}

// nodesfMalformed describes what is wrong with an answer on its own.
func (w *workload) nodesfMalformed(o *checker.Op, n *Node, a api.SnowflakeIDs) string {
	switch {
	case a.Namespace != nodesfNamespace:
		return fmt.Sprintf("answer for namespace %q", a.Namespace)
	case a.Node != n.ID:
		return fmt.Sprintf("asked %s, answered by %q", n.ID, a.Node)
	case len(a.IDsText) != len(a.IDs):
		return fmt.Sprintf("%d ids, %d ids_text", len(a.IDs), len(a.IDsText))
	}
	for i, s := range a.IDsText {
		if s != strconv.FormatInt(a.IDs[i], 10) {
			return fmt.Sprintf("ids_text[%d] = %q, ids[%d] = %d", i, s, i, a.IDs[i])
		}
	}
	return w.idsMalformed(o, a.WorkerID)
}

// idsMalformed checks a request's IDs: as many as asked, positive, strictly
// increasing, every one with worker id wk.
func (w *workload) idsMalformed(o *checker.Op, wk int64) string {
	if int64(len(o.IDs)) != o.Count {
		return fmt.Sprintf("asked for %d IDs, got %d", o.Count, len(o.IDs))
	}
	mask := int64(1)<<o.WorkerBits - 1
	for i, id := range o.IDs {
		switch {
		case id < 1:
			return fmt.Sprintf("ID %d", id)
		case i > 0 && id <= o.IDs[i-1]:
			return fmt.Sprintf("IDs of one answer not increasing: %d after %d", id, o.IDs[i-1])
		case (id>>o.SeqBits)&mask != wk:
			return fmt.Sprintf("ID %d carries worker %d, the answer names %d", id, (id>>o.SeqBits)&mask, wk)
		}
	}
	return ""
}

func shortBody(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}

// nodeSnowflakeRESP is one TICKETD.SNOWFLAKE ns count to node n over the
// Redis protocol (a connection per request: AUTH with the reserve token,
// then the command).
func (w *workload) nodeSnowflakeRESP(worker int, n *Node, addr string, count int) bool {
	o := w.nodesfOp(worker, n, "resp", count)
	ids, sent, err := w.respSnowflake(addr, count)
	switch {
	case err == nil:
		o.Outcome, o.IDs = checker.OK, ids
		wk := int64(-1)
		if len(ids) > 0 {
			wk = (ids[0] >> o.SeqBits) & (int64(1)<<o.WorkerBits - 1)
			o.LeaseWorker = &wk
		}
		o.Malformed = w.idsMalformed(o, wk)
	case isRESPError(err):
		// The server answered with an error: it made no IDs for this
		// request (TRYAGAIN and the like are unknowns by their meaning,
		// but no ID of theirs can be checked either way).
		o.Outcome, o.Err = checker.Fail, respErrKind(err.Error())
		if strings.HasPrefix(err.Error(), "TRYAGAIN") || strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			o.Outcome = checker.Unknown
		}
	case !sent:
		o.Outcome, o.Err = checker.Fail, netErrKind(err)
	default:
		o.Outcome, o.Err = checker.Unknown, netErrKind(err)
	}
	w.rec.done(o)
	return o.Outcome == checker.OK
}

// respErrKind names an error reply by its prefix and, when the next word
// is a problem type (kebab-case, as clock-behind), by that too: the figures
// count errors by kind, not by their text.
func respErrKind(msg string) string {
	f := strings.Fields(msg)
	switch {
	case len(f) == 0:
		return "RESP error"
	case strings.Contains(msg, "unknown command"):
		return f[0] + " unknown command"
	case len(f) > 1 && strings.Contains(f[1], "-") && strings.Trim(strings.ToLower(f[1]), "abcdefghijklmnopqrstuvwxyz-:") == "":
		return f[0] + " " + strings.TrimSuffix(f[1], ":")
	}
	return f[0]
}

// netErrKind is shortErr without the addresses of a read or write that
// timed out.
func netErrKind(err error) string {
	if s := err.Error(); strings.Contains(s, "i/o timeout") {
		return "timeout"
	}
	return shortErr(err)
}

// respError is an error reply: its first word and a bounded rest.
type respError string

func (e respError) Error() string { return string(e) }

func isRESPError(err error) bool { _, ok := err.(respError); return ok }

// respSnowflake sends AUTH and TICKETD.SNOWFLAKE and reads the array of
// integers. sent is true once the command may have reached the server.
func (w *workload) respSnowflake(addr string, count int) (ids []int64, sent bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	defer cancel()
	conn, err := w.c.b.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	rd := bufio.NewReader(conn)
	if _, err := conn.Write(respCommand("AUTH", w.cfg.reserveToken)); err != nil {
		return nil, false, err
	}
	if _, err := readRESP(rd); err != nil {
		return nil, false, err
	}
	if _, err := conn.Write(respCommand("TICKETD.SNOWFLAKE", nodesfNamespace, strconv.Itoa(count))); err != nil {
		return nil, true, err
	}
	v, err := readRESP(rd)
	if err != nil {
		return nil, true, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, true, respError(fmt.Sprintf("malformed: not an array: %v", v))
	}
	for _, e := range arr {
		id, ok := e.(int64)
		if !ok {
			return nil, true, respError(fmt.Sprintf("malformed: array element %v", e))
		}
		ids = append(ids, id)
	}
	return ids, true, nil
}

func respCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// readRESP reads one reply: a simple string, an integer, a bulk string, an
// array of those (RESP2 and the RESP3 null), or an error reply as a
// respError.
func readRESP(rd *bufio.Reader) (any, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, respError("malformed: empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		if len(body) > 120 {
			body = body[:120]
		}
		return nil, respError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '_':
		return nil, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 || n > 1_000_000 {
			return nil, respError("malformed: array length " + body)
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			v, err := readRESP(rd)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, respError("malformed: reply " + line)
}

// respHostPort is where node n takes the Redis protocol; "" when the nodes
// do not listen for it (Docker and loopback modes, or no server-made
// Snowflake workers).
func (c *Cluster) respHostPort(n *Node) string {
	if p, ok := c.b.(*procBackend); ok && p.respEnabled() {
		return net.JoinHostPort(n.Host, strconv.Itoa(respPort))
	}
	return ""
}

// respEnabled: the nodes are started with --resp-addr.
func (b *procBackend) respEnabled() bool { return b.fab != nil && b.cfg.ServerSnowflakeWorkers > 0 }

// pollLeaseFloors reads the namespace's lease listing (through the leader)
// and returns each lease's floor as its holder was handed it.
func (t *auditTail) pollLeaseFloors(ctx context.Context, ns string, layout api.Namespace) ([]checker.LeaseFloor, error) {
	n := t.node
	if n == nil {
		var err error
		if n, err = t.c.leader(ctx, 3*time.Second); err != nil {
			return nil, err
		}
	}
	var l api.LeaseList
	if _, err := t.c.call(ctx, http.MethodGet, n, "/v1/namespaces/"+ns+"/leases", nil, &l, 3*time.Second); err != nil {
		return nil, err
	}
	seen := t.now()
	var out []checker.LeaseFloor
	for _, x := range l.Leases {
		if x.GrantedMs == 0 {
			continue
		}
		f := checker.LeaseFloor{Namespace: ns, WorkerID: x.WorkerID, Holder: x.Holder, GrantedMs: x.GrantedMs, FloorMs: x.TimestampFloorMs, SeenNs: seen}
		if x.TimestampFloorMs > 0 {
			f.FloorTick = firstTickAbove(layout, x.TimestampFloorMs)
		}
		out = append(out, f)
	}
	return out, nil
}

// firstTickAbove is the first tick of the layout that starts after floorMs,
// as the SDK's generator takes it.
func firstTickAbove(l api.Namespace, floorMs int64) int64 {
	if floorMs < l.EpochMs {
		return 0
	}
	return (floorMs-l.EpochMs)/l.TickMs + 1
}
