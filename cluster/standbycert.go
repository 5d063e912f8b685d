package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The standby's trust horizon (issue 42). A standby cut off from its primary
// never receives the out-of-sync record that lets the primary go on without
// it, so its own log may say in sync when the primary has served far past
// it. What the standby may trust is what the primary's leader itself
// certified: "I, and every leader after me, will not record you out of sync
// before V". The leader issues a certificate only while the standby is
// recorded in sync, with V no later than the moment its own rules could
// record it out of sync, and never records it out of sync before the latest
// V it issued; a leader elected later gives the standby a full timeout from
// when it starts, which a quorum check proves is after the certificate was
// computed. Delay, queueing and reordering only make a certificate arrive
// later: they never move V. The proof is in DESIGN.md ("The standby's trust
// horizon").

// certFile holds, on the standby, the latest certificate it accepted.
const certFile = "standby-certificate"

// standbyCert is one certificate, as sent and as stored.
type standbyCert struct {
	// InSyncIndex is the index of the in-sync record the certificate is
	// about: the standby accepts it only once it has applied that record
	// as its own latest, so the log a promotion reads holds it.
	InSyncIndex uint64 `json:"in_sync_index"`
	// ValidUntil is V on the certifying leader's wall clock.
	ValidUntil time.Time `json:"valid_until"`
	Term       uint64    `json:"term"`
	Leader     string    `json:"leader"`
}

// newer reports whether c supersedes old: a later in-sync record, or the
// same one certified for longer.
func (c standbyCert) newer(old standbyCert) bool {
	if c.InSyncIndex != old.InSyncIndex {
		return c.InSyncIndex > old.InSyncIndex
	}
	return c.ValidUntil.After(old.ValidUntil)
}

// certAnswer is the standby's answer to a certificate.
type certAnswer struct {
	Stored bool   `json:"stored"`
	Error  string `json:"error,omitempty"`
}

// readCert is the certificate stored in dir (ok false when there is none).
func readCert(dir string) (standbyCert, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, certFile))
	if errors.Is(err, os.ErrNotExist) {
		return standbyCert{}, false, nil
	}
	if err != nil {
		return standbyCert{}, false, err
	}
	var c standbyCert
	if err := json.Unmarshal(b, &c); err != nil {
		return standbyCert{}, false, fmt.Errorf("%s: %v", certFile, err)
	}
	return c, true, nil
}

// certStore is the standby's end: it checks a certificate against the
// node's own applied state and keeps the latest on disk (fsynced before it
// answers, so a certificate the leader saw stored survives a crash).
type certStore struct {
	mu   sync.Mutex
	dir  string
	last standbyCert
	has  bool
}

func (s *certStore) open(dir string) error {
	c, ok, err := readCert(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	s.dir, s.last, s.has = dir, c, ok
	return nil
}

// latest is the stored certificate.
func (s *certStore) latest() (standbyCert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.has
}

// accept stores c if it supersedes what is stored.
func (s *certStore) accept(c standbyCert) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has && !c.newer(s.last) {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(s.dir, certFile), string(b)+"\n"); err != nil {
		return err
	}
	s.last, s.has = c, true
	return nil
}

// serveCert answers the certificates the leader sends on one connection,
// one JSON line each way, until the connection or the node closes.
func (n *Node) serveCert(c net.Conn) {
	if !n.certConns.add(c) {
		return
	}
	defer n.certConns.done(c)
	serveCertLines(c, n.acceptCert)
}

// serveCertLines answers each certificate line read from c with accept's
// verdict, until c ends or sends a line longer than certLineMax (a
// certificate is a short line: a longer one ends the connection rather than
// grow a buffer without bound).
func serveCertLines(c net.Conn, accept func(standbyCert) error) {
	sc := lineScanner(c)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		var cert standbyCert
		ans := certAnswer{}
		if err := json.Unmarshal(sc.Bytes(), &cert); err != nil {
			ans.Error = fmt.Sprintf("not a certificate: %v", err)
		} else if err := accept(cert); err != nil {
			ans.Error = err.Error()
		} else {
			ans.Stored = true
		}
		_ = c.SetWriteDeadline(time.Now().Add(muxHeaderTimeout))
		if err := enc.Encode(ans); err != nil {
			return
		}
	}
}

// certLineMax bounds one line on the wire, a certificate or its answer.
const certLineMax = 4096

func lineScanner(c net.Conn) *bufio.Scanner {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 512), certLineMax)
	return sc
}

// exchangeCert sends cert on c and reads the standby's answer from sc
// (c's lines): a line, bounded like the standby's.
func exchangeCert(c net.Conn, sc *bufio.Scanner, cert standbyCert) (certAnswer, error) {
	var ans certAnswer
	b, err := json.Marshal(cert)
	if err != nil {
		return ans, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return ans, err
	}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return ans, err
		}
		return ans, io.ErrUnexpectedEOF
	}
	if err := json.Unmarshal(sc.Bytes(), &ans); err != nil {
		return ans, fmt.Errorf("not an answer to a certificate: %v", err)
	}
	return ans, nil
}

// acceptCert stores cert if it is about this node's own latest record, in
// sync, at the certificate's index.
func (n *Node) acceptCert(cert standbyCert) error {
	sb, ok := n.fsm.StandbyInfo()
	switch {
	case !ok || sb.ID != n.cfg.ID:
		return fmt.Errorf("this node (%s) is not the recorded standby", n.cfg.ID)
	case !sb.InSync() || sb.SinceIndex != cert.InSyncIndex:
		return fmt.Errorf("this node has applied the %s record at index %d, not the in-sync record at %d yet", sb.State, sb.SinceIndex, cert.InSyncIndex)
	}
	if n.cfg.standbyTrustReceipt() {
		timeout := time.Duration(sb.TimeoutMs) * time.Millisecond
		cert.ValidUntil = time.Now().Add(timeout - timeout/10).UTC() // the planted bug (faults.go)
	}
	return n.certs.accept(cert)
}

// certJob is a certificate the leader has computed and bounded
// (certifiedUntil), to be confirmed by a quorum round and sent.
type certJob struct {
	computedAt time.Time // c: before the quorum round starts
	validUntil time.Time // V, as a monotonic deadline of this leader
	inSync     uint64
	standby    raft.ServerID
	addr       raft.ServerAddress
	term       uint64
}

// certifier confirms and sends the certificates of one stretch of
// leadership, latest first: a job still waiting when a newer one comes is
// dropped. It keeps one connection to the standby.
type certifier struct {
	n    *Node
	jobs chan certJob
	conn net.Conn
	addr raft.ServerAddress
	sc   *bufio.Scanner // conn's answer lines
}

func newCertifier(n *Node) *certifier {
	return &certifier{n: n, jobs: make(chan certJob, 1)}
}

// offer hands job over, replacing one not yet taken.
func (c *certifier) offer(job certJob) {
	for {
		select {
		case c.jobs <- job:
			return
		default:
		}
		select {
		case <-c.jobs:
		default:
		}
	}
}

// run sends jobs until stop closes.
func (c *certifier) run(stop <-chan struct{}) {
	defer c.close()
	for {
		select {
		case <-stop:
			return
		case <-c.n.shutdownCh:
			return
		case job := <-c.jobs:
			if err := c.send(job); err != nil {
				c.n.log.Debug("standby certificate not stored", "standby", job.standby, "err", err)
			}
		}
	}
}

// send confirms leadership with a quorum round that starts after the job
// was computed, then sends the certificate. V goes on the wire as a wall
// time: the computing instant's wall reading plus V's distance from it on
// the monotonic clock.
func (c *certifier) send(job certJob) error {
	if time.Until(job.validUntil) <= 0 {
		return errors.New("expired before it could be sent")
	}
	ctx, cancel := context.WithDeadline(context.Background(), job.validUntil)
	defer cancel()
	term, err := c.n.VerifyLeader(ctx)
	if err != nil {
		return fmt.Errorf("leadership not confirmed: %w", err)
	}
	if term != job.term {
		return fmt.Errorf("confirmed in term %d, computed in %d", term, job.term)
	}
	cert := standbyCert{
		InSyncIndex: job.inSync,
		ValidUntil:  job.computedAt.Round(0).Add(job.validUntil.Sub(job.computedAt)).UTC(),
		Term:        job.term,
		Leader:      c.n.cfg.ID,
	}
	if c.conn == nil || c.addr != job.addr {
		c.close()
		conn, err := dialService(c.n.mux.dial, string(job.addr), muxCert, time.Until(job.validUntil))
		if err != nil {
			return err
		}
		c.conn, c.addr, c.sc = conn, job.addr, lineScanner(conn)
	}
	_ = c.conn.SetDeadline(job.validUntil)
	ans, err := exchangeCert(c.conn, c.sc, cert)
	if err != nil {
		// The connection may hold a late answer: never reuse it.
		c.close()
		return err
	}
	if ans.Error != "" {
		return errors.New(ans.Error)
	}
	if ans.Stored {
		c.n.seen.certStored(cert.ValidUntil)
	}
	return nil
}

func (c *certifier) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// StandbyCertificate is the certificate stored in a standby's data
// directory: the in-sync record it is of, and the time its leader
// certified (ok false when there is none).
func StandbyCertificate(dir string) (inSyncIndex uint64, validUntil time.Time, ok bool, err error) {
	c, ok, err := readCert(dir)
	return c.InSyncIndex, c.ValidUntil, ok, err
}
