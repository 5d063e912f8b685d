// Package tlsfiles keeps TLS configurations built from PEM files on disk
// current: a certificate, its key and the CA bundle that peers are checked
// against. Reload re-reads them (on SIGHUP, or when Watch sees a file
// change), and every handshake from then on uses the new files; connections
// already open keep theirs. A reload that fails (a half-written file, a key
// that does not match its certificate) keeps the previous files in use, so a
// rotation cannot take a node off the network.
//
// Rotating a node certificate under the same CA: write the new certificate
// and key, then reload. Rotating the CA: first give every node a bundle of
// the old and the new CA, then new certificates from the new CA, then the new
// CA alone, reloading every node after each step.
package tlsfiles

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Files names the PEM files of one TLS identity.
type Files struct {
	Cert, Key, CA string
}

// Source holds the identity last loaded from Files.
type Source struct {
	files Files

	mu     sync.RWMutex
	cert   *tls.Certificate
	leaf   *x509.Certificate
	pool   *x509.CertPool
	sum    [sha256.Size]byte
	onLoad []func(leaf *x509.Certificate)
}

// Load reads files; it fails if any is missing or malformed.
func Load(files Files) (*Source, error) {
	if files.Cert == "" || files.Key == "" || files.CA == "" {
		return nil, errors.New("a certificate, its key and a CA file are all needed")
	}
	s := &Source{files: files}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Files are the files the source reads.
func (s *Source) Files() Files { return s.files }

// OnLoad calls f with the leaf certificate now and after every reload that
// changed something (for metrics and logs).
func (s *Source) OnLoad(f func(leaf *x509.Certificate)) {
	s.mu.Lock()
	s.onLoad = append(s.onLoad, f)
	leaf := s.leaf
	s.mu.Unlock()
	f(leaf)
}

// Reload re-reads the files. It reports whether anything changed; on error
// the identity loaded before stays in use.
func (s *Source) Reload() (changed bool, err error) {
	certPEM, keyPEM, caPEM, err := s.read()
	if err != nil {
		return false, err
	}
	return s.install(certPEM, keyPEM, caPEM)
}

func (s *Source) read() (certPEM, keyPEM, caPEM []byte, err error) {
	if certPEM, err = os.ReadFile(s.files.Cert); err != nil {
		return nil, nil, nil, err
	}
	if keyPEM, err = os.ReadFile(s.files.Key); err != nil {
		return nil, nil, nil, err
	}
	if caPEM, err = os.ReadFile(s.files.CA); err != nil {
		return nil, nil, nil, err
	}
	return certPEM, keyPEM, caPEM, nil
}

func (s *Source) install(certPEM, keyPEM, caPEM []byte) (bool, error) {
	sum := sha256.Sum256(bytes.Join([][]byte{certPEM, keyPEM, caPEM}, []byte{0}))
	s.mu.RLock()
	same := s.cert != nil && sum == s.sum
	s.mu.RUnlock()
	if same {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("%s / %s: %w", s.files.Cert, s.files.Key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return false, fmt.Errorf("%s holds no PEM certificate", s.files.CA)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return false, fmt.Errorf("%s: %w", s.files.Cert, err)
		}
	}
	// A certificate its own CA bundle does not vouch for would lock this
	// node out of its cluster (peers check it against the same CA): refuse
	// it rather than install it.
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return false, fmt.Errorf("%s is not signed by a CA in %s: %w", s.files.Cert, s.files.CA, err)
	}
	s.mu.Lock()
	s.cert, s.leaf, s.pool, s.sum = &cert, leaf, pool, sum
	hooks := append([]func(*x509.Certificate){}, s.onLoad...)
	s.mu.Unlock()
	for _, f := range hooks {
		f(leaf)
	}
	return true, nil
}

// Leaf is the certificate in use.
func (s *Source) Leaf() *x509.Certificate {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.leaf
}

func (s *Source) current() (*tls.Certificate, *x509.CertPool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert, s.pool
}

// Watch reloads the files whenever trigger fires (SIGHUP) and, if interval
// is positive, every interval, until stop is closed. After every attempt
// that changed something or failed, it calls report; a failed reload keeps
// the previous identity and is retried at the next tick or trigger.
func (s *Source) Watch(stop <-chan struct{}, trigger <-chan struct{}, interval time.Duration, report func(changed bool, err error)) {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	var lastErr string
	for {
		select {
		case <-stop:
			return
		case <-trigger:
			lastErr = "" // an operator asked: always report the outcome
		case <-tick:
		}
		changed, err := s.Reload()
		switch {
		case err != nil && err.Error() == lastErr:
			// The same broken file as at the last tick: reported once.
		case err != nil:
			lastErr = err.Error()
			report(false, err)
		default:
			lastErr = ""
			if changed {
				report(true, nil)
			}
		}
	}
}

// ServerConfig is a server-side config whose every handshake uses the
// identity loaded at that moment. With requireClientCert, clients must
// present a certificate signed by the current CA bundle.
func (s *Source) ServerConfig(requireClientCert bool) *tls.Config {
	auth := tls.NoClientCert
	if requireClientCert {
		auth = tls.RequireAndVerifyClientCert
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: auth}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cert, pool := s.current()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{*cert},
			ClientAuth:   auth,
			ClientCAs:    pool,
		}
		return c, nil
	}
	return base
}

// ClientConfig is a client-side config for one connection: it presents
// the current certificate and checks the server against the current CA
// bundle. Call it for every dial (crypto/tls reads RootCAs from the config
// a connection was made with, so a config kept for long would keep trusting
// a CA that was rotated out). The caller sets ServerName.
func (s *Source) ClientConfig() *tls.Config {
	cert, pool := s.current()
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*cert},
		RootCAs:      pool,
	}
}
