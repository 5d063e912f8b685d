package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pki"
)

func TestIssue_NodeCertificate_VerifiesForItsNamesOnly(t *testing.T) {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "ticketd test CA"})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.CertOptions{
		CommonName: "n1", Usage: pki.Node,
		DNSNames: []string{"n1", "localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	leaf := mustParse(t, certPEM)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"n1", "localhost", "127.0.0.1"} {
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
				t.Errorf("%s for use %v: %v", name, use, err)
			}
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "n2"}); err == nil {
		t.Error("the certificate of n1 verifies as n2")
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d < 364*24*time.Hour || d > 366*24*time.Hour {
		t.Errorf("default lifetime %v, want a year", d)
	}
	other, _ := pki.NewCA(pki.CAOptions{CommonName: "other"})
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: otherRoots, DNSName: "n1"}); err == nil {
		t.Error("verifies under another CA")
	}
}

func TestIssue_ClientCertificate_CannotServe(t *testing.T) {
	ca, _ := pki.NewCA(pki.CAOptions{CommonName: "ca"})
	certPEM, _, err := ca.Issue(pki.CertOptions{CommonName: "ops", Usage: pki.Client})
	if err != nil {
		t.Fatal(err)
	}
	block := mustParse(t, certPEM)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := block.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client use: %v", err)
	}
	if _, err := block.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Fatal("a client certificate verifies for server use")
	}
}

func TestIssue_RefusesWhatWouldNotWork(t *testing.T) {
	ca, _ := pki.NewCA(pki.CAOptions{CommonName: "ca", Days: 30})
	for name, o := range map[string]pki.CertOptions{
		"no common name":     {Usage: pki.Node, DNSNames: []string{"n1"}},
		"node without names": {CommonName: "n1", Usage: pki.Node},
		"outlives the CA":    {CommonName: "n1", Usage: pki.Node, DNSNames: []string{"n1"}, Days: 31},
		"negative lifetime":  {CommonName: "n1", Usage: pki.Node, DNSNames: []string{"n1"}, Days: -1},
	} {
		if _, _, err := ca.Issue(o); err == nil {
			t.Errorf("%s: issued", name)
		}
	}
}

func TestLoadCA_RoundTripAndMismatch(t *testing.T) {
	ca, _ := pki.NewCA(pki.CAOptions{CommonName: "ca"})
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := pki.LoadCA(ca.CertPEM(), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Cert.Equal(ca.Cert) {
		t.Fatal("certificate changed")
	}
	other, _ := pki.NewCA(pki.CAOptions{CommonName: "other"})
	otherKey, _ := other.KeyPEM()
	if _, err := pki.LoadCA(ca.CertPEM(), otherKey); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("mismatched key: %v", err)
	}
	leafPEM, _, _ := ca.Issue(pki.CertOptions{CommonName: "n1", DNSNames: []string{"n1"}})
	if _, err := pki.LoadCA(leafPEM, keyPEM); err == nil {
		t.Fatal("a leaf loaded as a CA")
	}
}

func mustParse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
