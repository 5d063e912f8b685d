package server_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/pki"
	"github.com/ticketd/ticketd/server"
	"github.com/ticketd/ticketd/tlsfiles"
)

// certDir is one node's certificate files, as an operator lays them out.
type certDir struct {
	files tlsfiles.Files
}

func newCertDir(t *testing.T, id string) certDir {
	dir := filepath.Join(t.TempDir(), id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return certDir{tlsfiles.Files{Cert: filepath.Join(dir, "node.pem"), Key: filepath.Join(dir, "node-key.pem"), CA: filepath.Join(dir, "ca.pem")}}
}

// write issues a node certificate for 127.0.0.1 from signer, writes it with
// the bundle of trusted CAs, and returns its serial.
func (d certDir) write(t *testing.T, id string, signer *pki.CA, trusted ...*pki.CA) *big.Int {
	t.Helper()
	certPEM, keyPEM, err := signer.Issue(pki.CertOptions{CommonName: id, DNSNames: []string{id}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	var bundle bytes.Buffer
	for _, ca := range trusted {
		bundle.Write(ca.CertPEM())
	}
	// Key first, certificate last, each replaced by a rename: a reload
	// in between sees a mismatched pair and keeps the old identity.
	for _, f := range []struct {
		path string
		b    []byte
	}{{d.files.CA, bundle.Bytes()}, {d.files.Key, keyPEM}, {d.files.Cert, certPEM}} {
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, f.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf.SerialNumber
}

func mustCA(t *testing.T, name string) *pki.CA {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: name})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// servedSerial handshakes with a node's Raft port as a client with the
// identity in d and returns the serial of the certificate the node
// presented; err is set if either side refused the other.
func servedSerial(addr string, d certDir) (*big.Int, error) {
	src, err := tlsfiles.Load(d.files)
	if err != nil {
		return nil, err
	}
	cfg := src.ClientConfig()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// TLS 1.3: the server checks the client certificate after the
	// client's handshake returns. A probe frame gets an answer only once
	// the server accepted it.
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("P01234567")); err != nil {
		return nil, err
	}
	if _, err := c.Read(make([]byte, 16)); err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// TestRaftTLS_RotateNodeCertificatesAndCA_UnderLoad rotates every node's
// Raft certificate to one from a new CA while reservations run through
// every node, in the steps an operator takes (trust both CAs, switch the
// certificates, drop the old CA), each node reloading its files. No
// reservation may fail. Afterwards a certificate of the old CA is refused
// everywhere, and a follower restarted with the new files alone catches
// up: the leader reached it over fresh connections with its new identity.
func TestRaftTLS_RotateNodeCertificatesAndCA_UnderLoad(t *testing.T) {
	oldCA, newCA := mustCA(t, "old-ca"), mustCA(t, "new-ca")
	ids := []string{"n1", "n2", "n3"}
	dirs := map[string]certDir{}
	for _, id := range ids {
		dirs[id] = newCertDir(t, id)
		dirs[id].write(t, id, oldCA, oldCA)
	}
	var mu sync.Mutex
	sources := map[string]*tlsfiles.Source{}
	tc := testcluster.New(t, 3, func(id string, cfg *server.Config) {
		src, err := tlsfiles.Load(dirs[id].files)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		mu.Lock()
		sources[id] = src
		mu.Unlock()
		cfg.Cluster.TLS = &cluster.RaftTLS{Server: src.ServerConfig(true), Client: src.ClientConfig}
	})
	tc.CreateSequence("orders", nil)
	reload := func(id string) {
		t.Helper()
		mu.Lock()
		src := sources[id]
		mu.Unlock()
		if changed, err := src.Reload(); err != nil || !changed {
			t.Fatalf("reload %s: changed %v, err %v", id, changed, err)
		}
	}

	// Load: raw HTTP reservations through every node in turn; any answer
	// but 200 counts as a failure.
	all := tc.Running()
	targets := all // the nodes the load goes to; read and changed under inflightMu
	var log testcluster.RangeLog
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	// inflight counts each node's unanswered requests, so the follower is
	// killed only once nothing sent to it is still on its way. A worker
	// picks its target and counts it under one lock, and the targets change
	// under the same lock: a pick made before the change is counted.
	var inflightMu sync.Mutex
	inflight := map[string]int{}
	pick := func(i int) *testcluster.Node {
		inflightMu.Lock()
		defer inflightMu.Unlock()
		n := targets[i%len(targets)]
		inflight[n.ID]++
		return n
	}
	done := func(n *testcluster.Node) {
		inflightMu.Lock()
		inflight[n.ID]--
		inflightMu.Unlock()
	}
	setTargets := func(ns []*testcluster.Node) {
		inflightMu.Lock()
		targets = ns
		inflightMu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := pick(i)
				resp, err := testkit.Client{}.Call(http.MethodPost, "http://"+n.HTTPAddr+"/v1/sequences/orders/ranges", api.ReserveRequest{Count: 100})
				done(n)
				var r api.Range
				if err == nil && resp.Status == http.StatusOK {
					err = json.Unmarshal(resp.Body, &r)
				}
				if err != nil || resp.Status != http.StatusOK {
					failed.Add(1)
					// The whole answer: a 503's problem says which round failed.
					firstErr.CompareAndSwap(nil, fmt.Sprintf("via %s: status %d, err %v, body %s", n.ID, resp.Status, err, resp.Body))
					continue
				}
				log.Add(r)
				ok.Add(1)
			}
		}(w)
	}
	progress := func(step string) {
		t.Helper()
		before := ok.Load()
		testkit.EventuallyErr(t, 10*time.Second, 10*time.Millisecond, step+": 50 more reservations", func() error {
			if ok.Load() < before+50 {
				return fmt.Errorf("reservations stalled (%d ok, %d failed)", ok.Load(), failed.Load())
			}
			return nil
		})
	}
	progress("before rotation")

	// Step 1: every node trusts both CAs.
	for _, id := range ids {
		dirs[id].write(t, id, oldCA, oldCA, newCA)
		reload(id)
		progress("bundle on " + id)
	}
	// Step 2: every node switches to a certificate of the new CA.
	serials := map[string]*big.Int{}
	for _, id := range ids {
		serials[id] = dirs[id].write(t, id, newCA, oldCA, newCA)
		reload(id)
		progress("new certificate on " + id)
	}
	// Step 3: the old CA is dropped.
	for _, id := range ids {
		serials[id] = dirs[id].write(t, id, newCA, newCA)
		reload(id)
		progress("old CA dropped on " + id)
	}

	// Every node serves its new certificate to a new connection, and
	// refuses a client of the old CA.
	probeNew, probeOld := newCertDir(t, "probe-new"), newCertDir(t, "probe-old")
	probeNew.write(t, "probe", newCA, newCA)
	probeOld.write(t, "probe", oldCA, oldCA, newCA)
	for _, n := range tc.Running() {
		got, err := servedSerial(n.RaftAddr, probeNew)
		if err != nil || got.Cmp(serials[n.ID]) != 0 {
			t.Fatalf("%s serves serial %v (want %v), err %v", n.ID, got, serials[n.ID], err)
		}
		if _, err := servedSerial(n.RaftAddr, probeOld); err == nil {
			t.Fatalf("%s accepted a client certificate of the dropped CA", n.ID)
		}
	}

	// A follower restarted from the new files alone: every connection to
	// it is new. Load goes to the other two meanwhile.
	leader := tc.Leader(10 * time.Second)
	var follower *testcluster.Node
	var others []*testcluster.Node
	for _, n := range tc.Running() {
		if n != leader && follower == nil {
			follower = n
		} else {
			others = append(others, n)
		}
	}
	setTargets(others)
	testkit.Eventually(t, 10*time.Second, 5*time.Millisecond, "requests already sent to "+follower.ID+" answered", func() bool {
		inflightMu.Lock()
		defer inflightMu.Unlock()
		return inflight[follower.ID] == 0
	})
	tc.Kill(follower.ID)
	progress("follower down")
	tc.Restart(follower.ID)
	testkit.Eventually(t, 20*time.Second, 20*time.Millisecond, follower.ID+" catching up over new connections", func() bool {
		n := tc.Node(follower.ID)
		if n.Srv == nil {
			return false
		}
		fs, err1 := n.Srv.Node().Status()
		ls, err2 := leader.Srv.Node().Status()
		return err1 == nil && err2 == nil && fs.Leader == leader.ID && fs.AppliedIndex >= ls.CommitIndex
	})
	setTargets(all)
	progress("follower back")

	close(stop)
	wg.Wait()
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d of %d reservations failed during rotation; first: %v", f, f+ok.Load(), firstErr.Load())
	}
	log.CheckDisjoint(t)
	t.Logf("%d reservations, none failed, across a CA and certificate rotation", ok.Load())
}
