package tlsfiles_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pki"
	"github.com/ticketd/ticketd/tlsfiles"
)

type identity struct {
	dir   string
	files tlsfiles.Files
}

func newIdentity(t *testing.T) identity {
	dir := t.TempDir()
	return identity{dir, tlsfiles.Files{Cert: filepath.Join(dir, "node.pem"), Key: filepath.Join(dir, "node-key.pem"), CA: filepath.Join(dir, "ca.pem")}}
}

// write issues a certificate for 127.0.0.1 from ca and writes it with
// trusted as the CA bundle. It returns the serial.
func (id identity) write(t *testing.T, ca *pki.CA, trusted ...*pki.CA) *big.Int {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(pki.CertOptions{CommonName: "node", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	var bundle bytes.Buffer
	for _, c := range trusted {
		bundle.Write(c.CertPEM())
	}
	for path, b := range map[string][]byte{id.files.Cert: certPEM, id.files.Key: keyPEM, id.files.CA: bundle.Bytes()} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, _ := tls.X509KeyPair(certPEM, keyPEM)
	return pair.Leaf.SerialNumber
}

func newCA(t *testing.T, name string) *pki.CA {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: name})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// serve accepts mutual-TLS connections with src's server config; each
// accepted connection is handshaken and then closed.
func serve(t *testing.T, src *tlsfiles.Source) string {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", src.ServerConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				_, _ = io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// dial handshakes with addr as src's client and returns the serial the
// server presented, or the handshake error.
func dial(addr string, src *tlsfiles.Source) (*big.Int, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, src.ClientConfig())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// In TLS 1.3 the server checks the client's certificate after the
	// client's handshake returns: a read shows whether it was refused.
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			return nil, err
		}
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

func load(t *testing.T, id identity) *tlsfiles.Source {
	t.Helper()
	src, err := tlsfiles.Load(id.files)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestReload_NewCertificateServedToNewConnections(t *testing.T) {
	ca := newCA(t, "ca")
	srvID, cliID := newIdentity(t), newIdentity(t)
	first := srvID.write(t, ca, ca)
	cliID.write(t, ca, ca)
	srv, cli := load(t, srvID), load(t, cliID)
	addr := serve(t, srv)
	if got, err := dial(addr, cli); err != nil || got.Cmp(first) != 0 {
		t.Fatalf("before rotation: serial %v, err %v", got, err)
	}
	second := srvID.write(t, ca, ca)
	if changed, err := srv.Reload(); err != nil || !changed {
		t.Fatalf("reload: changed %v, err %v", changed, err)
	}
	if got, err := dial(addr, cli); err != nil || got.Cmp(second) != 0 {
		t.Fatalf("after rotation: serial %v (want %v), err %v", got, second, err)
	}
	if changed, err := srv.Reload(); err != nil || changed {
		t.Fatalf("reload of unchanged files: changed %v, err %v", changed, err)
	}
}

func TestReload_BadFilesKeepThePreviousIdentity(t *testing.T) {
	ca, other := newCA(t, "ca"), newCA(t, "other")
	srvID, cliID := newIdentity(t), newIdentity(t)
	serial := srvID.write(t, ca, ca)
	cliID.write(t, ca, ca)
	srv, cli := load(t, srvID), load(t, cliID)
	addr := serve(t, srv)

	// A half-written certificate.
	good, _ := os.ReadFile(srvID.files.Cert)
	if err := os.WriteFile(srvID.files.Cert, good[:len(good)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Reload(); err == nil {
		t.Fatal("a truncated certificate loaded")
	}
	// A certificate from a CA the node's own bundle does not hold.
	stranger := newIdentity(t)
	stranger.write(t, other, other)
	b, _ := os.ReadFile(stranger.files.Cert)
	k, _ := os.ReadFile(stranger.files.Key)
	_ = os.WriteFile(srvID.files.Cert, b, 0o600)
	_ = os.WriteFile(srvID.files.Key, k, 0o600)
	if _, err := srv.Reload(); err == nil {
		t.Fatal("a certificate not signed by the node's CA loaded")
	}
	if got, err := dial(addr, cli); err != nil || got.Cmp(serial) != 0 {
		t.Fatalf("after failed reloads: serial %v (want %v), err %v", got, serial, err)
	}
}

// TestReload_CARotation walks the documented steps: old+new CA bundle,
// then certificates from the new CA, then the new CA alone. Every step
// keeps both sides talking; at the end the old CA is no longer trusted.
func TestReload_CARotation(t *testing.T) {
	oldCA, newCA := newCA(t, "old"), newCA(t, "new")
	a, b := newIdentity(t), newIdentity(t)
	a.write(t, oldCA, oldCA)
	b.write(t, oldCA, oldCA)
	srcA, srcB := load(t, a), load(t, b)
	addrA, addrB := serve(t, srcA), serve(t, srcB)
	check := func(step string) {
		t.Helper()
		if _, err := dial(addrA, srcB); err != nil {
			t.Fatalf("%s: b → a: %v", step, err)
		}
		if _, err := dial(addrB, srcA); err != nil {
			t.Fatalf("%s: a → b: %v", step, err)
		}
	}
	reload := func(src *tlsfiles.Source) {
		t.Helper()
		if _, err := src.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	check("start")
	a.write(t, oldCA, oldCA, newCA)
	b.write(t, oldCA, oldCA, newCA)
	reload(srcA)
	check("a trusts both")
	reload(srcB)
	check("both trust both")
	a.write(t, newCA, oldCA, newCA)
	reload(srcA)
	check("a on the new CA")
	b.write(t, newCA, oldCA, newCA)
	reload(srcB)
	check("both on the new CA")
	a.write(t, newCA, newCA)
	b.write(t, newCA, newCA)
	reload(srcA)
	reload(srcB)
	check("old CA dropped")

	stale := newIdentity(t)
	stale.write(t, oldCA, oldCA, newCA)
	if _, err := dial(addrA, load(t, stale)); err == nil {
		t.Fatal("a certificate of the dropped CA was accepted")
	}
}

func TestWatch_PicksUpChangedFiles(t *testing.T) {
	ca := newCA(t, "ca")
	id := newIdentity(t)
	id.write(t, ca, ca)
	src := load(t, id)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		src.Watch(stop, nil, 10*time.Millisecond, func(bool, error) {})
		close(done)
	}()
	defer func() { close(stop); <-done }()
	want := id.write(t, ca, ca)
	deadline := time.Now().Add(5 * time.Second)
	for src.Leaf().SerialNumber.Cmp(want) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("Watch did not reload the changed files")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClientConfig_ChecksTheServerName(t *testing.T) {
	ca := newCA(t, "ca")
	srvID, cliID := newIdentity(t), newIdentity(t)
	srvID.write(t, ca, ca)
	cliID.write(t, ca, ca)
	addr := serve(t, load(t, srvID))
	cfg := load(t, cliID).ClientConfig()
	cfg.ServerName = "n9.example"
	if c, err := tls.Dial("tcp", addr, cfg); err == nil {
		c.Close()
		t.Fatal("a server certificate for other names was accepted")
	}
}

func TestWatch_TriggerReloadsAndReportsFailures(t *testing.T) {
	ca := newCA(t, "ca")
	id := newIdentity(t)
	id.write(t, ca, ca)
	src := load(t, id)
	stop, trigger := make(chan struct{}), make(chan struct{})
	type result struct {
		changed bool
		err     error
	}
	reports := make(chan result, 4)
	done := make(chan struct{})
	go func() {
		src.Watch(stop, trigger, 0, func(c bool, err error) { reports <- result{c, err} })
		close(done)
	}()
	defer func() { close(stop); <-done }()
	want := id.write(t, ca, ca)
	trigger <- struct{}{}
	if r := <-reports; !r.changed || r.err != nil || src.Leaf().SerialNumber.Cmp(want) != 0 {
		t.Fatalf("after a trigger: %+v", r)
	}
	_ = os.WriteFile(id.files.Key, []byte("not a key"), 0o600)
	trigger <- struct{}{}
	if r := <-reports; r.err == nil {
		t.Fatalf("a broken key was not reported: %+v", r)
	}
	if src.Leaf().SerialNumber.Cmp(want) != 0 {
		t.Fatal("a failed reload replaced the certificate")
	}
}
