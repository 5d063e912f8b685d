package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// makeCerts runs `ticketd tls` to make a CA in dir and a certificate for
// each node id (and a client certificate named "probe").
func makeCerts(t *testing.T, dir string, ids ...string) {
	t.Helper()
	if out, errOut, code := runCLI(t, nil, "tls", "ca", "create", "--dir", dir); code != 0 {
		t.Fatalf("tls ca create: %d %s %s", code, out, errOut)
	}
	for _, id := range ids {
		if out, errOut, code := runCLI(t, nil, "tls", "cert", "create", "--dir", dir, "--node", id); code != 0 {
			t.Fatalf("tls cert create --node %s: %d %s %s", id, code, out, errOut)
		}
	}
	if out, errOut, code := runCLI(t, nil, "tls", "cert", "create", "--dir", dir, "--client", "probe"); code != 0 {
		t.Fatalf("tls cert create --client: %d %s %s", code, out, errOut)
	}
}

func raftTLSFlags(dir, id string) []string {
	return []string{"--raft-tls-cert", filepath.Join(dir, id+".pem"), "--raft-tls-key", filepath.Join(dir, id+"-key.pem"), "--raft-tls-ca", filepath.Join(dir, "ca.pem")}
}

// raftServedSerial connects to a Raft port with the "probe" client
// certificate from dir and returns the serial of the node's certificate.
func raftServedSerial(t *testing.T, dir, addr string) *big.Int {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "probe.pem"), filepath.Join(dir, "probe-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS to the Raft port %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

func scrapeMetric(t *testing.T, n *node, name string) (float64, bool) {
	t.Helper()
	b := kit.MustCall(t, http.MethodGet, n.url()+"/metrics", nil).Body
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.e+-]+)$`)
	m := re.FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	var v float64
	_, _ = fmt.Sscan(string(m[1]), &v)
	return v, true
}

// TestBinary_TLS_CLICertificates_MutualTLSCluster_SIGHUPReload makes a CA
// and node certificates with `ticketd tls`, runs a 3-node cluster with
// mutual TLS on the Raft port, and rotates one node's certificate: new
// files, SIGHUP, and the next connection gets the new certificate while
// the cluster keeps serving.
func TestBinary_TLS_CLICertificates_MutualTLSCluster_SIGHUPReload(t *testing.T) {
	c := newCluster(t)
	dir := filepath.Join(c.base, "tls")
	makeCerts(t, dir, "n1", "n2", "n3")
	for _, f := range []string{"ca.pem", "ca-key.pem", "n1.pem", "n1-key.pem", "probe-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, err %v; want 0600", f, st.Mode().Perm(), err)
		}
	}
	// tls init makes only what is missing: n1 keeps its certificate, n4
	// gets one.
	n1Before, _ := os.ReadFile(filepath.Join(dir, "n1.pem"))
	if out, errOut, code := runCLI(t, nil, "tls", "init", "--dir", dir, "--nodes", "n1,n4"); code != 0 || !strings.Contains(out, "n4.pem") || strings.Contains(out, "n1.pem") {
		t.Fatalf("tls init: exit %d\n%s\n%s", code, out, errOut)
	}
	if n1After, _ := os.ReadFile(filepath.Join(dir, "n1.pem")); string(n1After) != string(n1Before) {
		t.Fatal("tls init replaced an existing certificate")
	}
	// Nothing is overwritten: a second CA in the same place is refused.
	if _, errOut, code := runCLI(t, nil, "tls", "ca", "create", "--dir", dir); code == 0 || !strings.Contains(errOut, "not overwriting") {
		t.Fatalf("a second CA over the first: exit %d, %s", code, errOut)
	}

	addrs := freeAddrs(t, 6)
	initial := fmt.Sprintf("n1=%s,n2=%s,n3=%s", addrs[1], addrs[3], addrs[5])
	var nodes []*node
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, c.newNode(id, addrs[2*i], addrs[2*i+1], append([]string{"--initial-cluster", initial}, raftTLSFlags(dir, id)...)...))
	}
	for _, n := range nodes {
		c.start(n)
	}
	c.waitReady(20*time.Second, nodes...)
	createSequence(t, nodes[0], "orders")
	reserveVia(t, nodes[1], "orders", 10)
	for _, n := range nodes {
		var st api.ClusterStatus
		if _, err := kit.Do(http.MethodGet, n.url()+"/v1/cluster", nil, &st); err != nil || !st.RaftTLS || st.APITLS {
			t.Fatalf("%s /v1/cluster: raft_tls %v api_tls %v, err %v", n.id, st.RaftTLS, st.APITLS, err)
		}
		if v, ok := scrapeMetric(t, n, "ticketd_raft_tls"); !ok || v != 1 {
			t.Fatalf("%s ticketd_raft_tls = %v (found %v)", n.id, v, ok)
		}
		if v, ok := scrapeMetric(t, n, `ticketd_tls_certificate_expiry_timestamp_seconds{listener="raft"}`); !ok || v < float64(time.Now().Add(300*24*time.Hour).Unix()) {
			t.Fatalf("%s certificate expiry metric %v (found %v)", n.id, v, ok)
		}
	}

	// Rotate n1: a new certificate from the same CA, moved into place,
	// then SIGHUP.
	n1 := nodes[0]
	before := raftServedSerial(t, dir, n1.raftAddr)
	fresh := filepath.Join(c.base, "tls-new")
	if err := os.MkdirAll(fresh, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI(t, nil, "tls", "cert", "create", "--dir", fresh, "--ca", filepath.Join(dir, "ca.pem"), "--ca-key", filepath.Join(dir, "ca-key.pem"), "--node", "n1"); code != 0 {
		t.Fatalf("tls cert create for the rotation: %d %s %s", code, out, errOut)
	}
	for _, f := range []string{"n1-key.pem", "n1.pem"} {
		if err := os.Rename(filepath.Join(fresh, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n1.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, _ := scrapeMetric(t, n1, `ticketd_tls_reloads_total{listener="raft",result="ok"}`)
		if v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload counted within 10s of SIGHUP; log:\n%s", n1.lastLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after := raftServedSerial(t, dir, n1.raftAddr); after.Cmp(before) == 0 {
		t.Fatalf("n1 still serves serial %v after the reload", before)
	}
	if !n1.running() {
		t.Fatal("SIGHUP stopped the node")
	}
	for _, n := range nodes {
		reserveVia(t, n, "orders", 10)
	}
}

// TestBinary_PlaintextRaft_RefusedUnlessExplicit: outside --dev a node
// without Raft TLS refuses to start and says how to make certificates;
// --insecure-plaintext-raft starts it, and /v1/cluster and the metric say
// its Raft traffic is plaintext.
func TestBinary_PlaintextRaft_RefusedUnlessExplicit(t *testing.T) {
	c := newCluster(t)
	addrs := freeAddrs(t, 2)
	tokens := []string{"TICKETD_TOKENS=admin " + e2eAdmin + ";reserve " + e2eReserve}
	args := []string{"serve", "--id", "p1", "--data-dir", filepath.Join(c.base, "refused"), "--bootstrap", "--http-addr", addrs[0], "--raft-addr", addrs[1]}
	_, errOut, code := runCLI(t, tokens, args...)
	if code != 2 {
		t.Fatalf("a node without Raft TLS: exit %d, want 2; stderr %s", code, errOut)
	}
	for _, want := range []string{"--raft-tls-cert", "ticketd tls ca create", "ticketd tls cert create", "--insecure-plaintext-raft"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal does not mention %q: %s", want, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(c.base, "refused")); err == nil {
		t.Error("the refused node created its data dir")
	}

	dir := filepath.Join(c.base, "tls")
	makeCerts(t, dir, "p1")
	_, errOut, code = runCLI(t, tokens, append(args, append([]string{"--insecure-plaintext-raft"}, raftTLSFlags(dir, "p1")...)...)...)
	if code != 2 || !strings.Contains(errOut, "contradicts") {
		t.Fatalf("--insecure-plaintext-raft with TLS files: exit %d, %s", code, errOut)
	}

	n := authNode(t, c, "p1")
	var st api.ClusterStatus
	admin := kit
	admin.Token = e2eAdmin
	if code, err := admin.Do(http.MethodGet, n.url()+"/v1/cluster", nil, &st); err != nil || code != 200 || st.RaftTLS {
		t.Fatalf("/v1/cluster of a plaintext node: %d %v raft_tls %v", code, err, st.RaftTLS)
	}
	if !strings.Contains(n.lastLog(), "PLAINTEXT") {
		t.Fatalf("no warning about plaintext Raft in the log:\n%s", n.lastLog())
	}
}
