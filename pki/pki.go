// Package pki makes a cluster's certificate authority and the certificates
// of its nodes and clients, in the spirit of `consul tls ca create` and
// `consul tls cert create`: one private CA per cluster, ECDSA P-256 keys,
// PEM files.
//
// Why a private CA and not the system's roots: the Raft port trusts exactly
// the certificates of its own cluster. A node accepts a peer only if that
// peer's certificate chains to the cluster CA, so a certificate bought from a
// public CA for the same host name must not be enough to join.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Default lifetimes, as Consul's: a CA outlives many certificate rotations,
// a leaf is rotated yearly (or sooner: nodes reload their files live).
const (
	DefaultCADays   = 5 * 365
	DefaultCertDays = 365
)

// Usage says what a certificate may be used for.
type Usage int

const (
	// Node certificates serve the Raft port and the API, and present
	// themselves as clients when dialing peers (mutual TLS).
	Node Usage = iota
	// Client certificates authenticate API clients and operators' tools.
	Client
)

// CA is a certificate authority: its certificate and private key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// CAOptions describe a new CA.
type CAOptions struct {
	// CommonName names the CA; it shows in every certificate it signs.
	CommonName string
	// Days is the CA's lifetime; 0 means DefaultCADays.
	Days int
	// Now is when the CA's validity starts (a minute earlier, to tolerate
	// clock differences between hosts); the zero value means time.Now().
	Now time.Time
}

// CertOptions describe a new node or client certificate.
type CertOptions struct {
	CommonName string
	Usage      Usage
	// DNSNames and IPs are the subject alternative names a peer checks
	// when it dials this node: the host part of every address other
	// nodes and clients use to reach it.
	DNSNames []string
	IPs      []net.IP
	Days     int // 0 means DefaultCertDays
	Now      time.Time
}

// NewCA makes a CA with a fresh key.
func NewCA(o CAOptions) (*CA, error) {
	if o.CommonName == "" {
		return nil, errors.New("the CA needs a common name")
	}
	days, err := lifetime(o.Days, DefaultCADays)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	ski, err := keyID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	start := startTime(o.Now)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: o.CommonName, Organization: []string{"ticketd"}},
		NotBefore:             start,
		NotAfter:              start.Add(time.Duration(days) * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		// A cluster CA signs leaves only: no intermediate can be made
		// from it.
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:   ski,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Issue makes a certificate signed by ca, with a fresh key. It returns the
// certificate and key as PEM.
func (ca *CA) Issue(o CertOptions) (certPEM, keyPEM []byte, err error) {
	if o.CommonName == "" {
		return nil, nil, errors.New("the certificate needs a common name")
	}
	if o.Usage == Node && len(o.DNSNames) == 0 && len(o.IPs) == 0 {
		return nil, nil, errors.New("a node certificate needs at least one DNS name or IP address that peers dial")
	}
	days, err := lifetime(o.Days, DefaultCertDays)
	if err != nil {
		return nil, nil, err
	}
	start := startTime(o.Now)
	notAfter := start.Add(time.Duration(days) * 24 * time.Hour)
	if notAfter.After(ca.Cert.NotAfter) {
		return nil, nil, fmt.Errorf("a certificate valid for %d days would outlive its CA (valid until %s): issue it for fewer days or make a new CA", days, ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	ski, err := keyID(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	ext := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if o.Usage == Node {
		ext = append(ext, x509.ExtKeyUsageServerAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: o.CommonName, Organization: []string{"ticketd"}},
		NotBefore:             start,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           ext,
		BasicConstraintsValid: true,
		DNSNames:              o.DNSNames,
		IPAddresses:           o.IPs,
		SubjectKeyId:          ski,
		AuthorityKeyId:        ca.Cert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// CertPEM is the CA's certificate as PEM: what every node and client trusts.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// KeyPEM is the CA's private key as PEM: keep it off the nodes.
func (ca *CA) KeyPEM() ([]byte, error) { return encodeKey(ca.Key) }

// LoadCA reads a CA written by CertPEM and KeyPEM, and checks that the two
// belong together.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("the CA certificate file holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("the CA certificate is not a CA certificate")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("the CA key file holds no PEM key")
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("CA key: want an ECDSA key, got %T", k)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the CA key does not belong to the CA certificate")
	}
	return &CA{Cert: cert, Key: key}, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func lifetime(days, def int) (int, error) {
	switch {
	case days == 0:
		return def, nil
	case days < 0:
		return 0, fmt.Errorf("lifetime %d days: must be positive", days)
	case days > 100*365:
		return 0, fmt.Errorf("lifetime %d days: at most 100 years", days)
	}
	return days, nil
}

func startTime(now time.Time) time.Time {
	if now.IsZero() {
		now = time.Now()
	}
	return now.Add(-time.Minute).Truncate(time.Second)
}

// newSerial is a random 128-bit serial, as the CA/B Forum asks (at least 64
// bits of randomness): serials must never repeat under one CA.
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// keyID is the subject key identifier of RFC 5280 4.2.1.2, method (1)-like:
// a hash of the public key, so chains are built without guessing.
func keyID(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return sum[:20], nil
}
