package client

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
)

// The environment variables NewFromEnv reads: the CLI's own (every flag of
// `ticketd` is also read from TICKETD_<FLAG>), so that a program and the
// CLI run in one shell reach the same cluster the same way. The Python and
// Java clients read the same names.
const (
	EnvAddr  = "TICKETD_ADDR"  // endpoints, comma-separated: https://10.0.0.1:8080,https://10.0.0.2:8080
	EnvToken = "TICKETD_TOKEN" // the bearer token itself
	EnvCA    = "TICKETD_CA"    // a PEM file of the CA that signed the nodes' certificates
	EnvCert  = "TICKETD_CERT"  // a PEM client certificate, for nodes that require one (with EnvKey)
	EnvKey   = "TICKETD_KEY"   // the PEM private key of EnvCert
)

// NewFromEnv is New with its endpoints, token and TLS taken from the
// environment, as the CLI takes them: TICKETD_ADDR (required: a library
// does not guess a cluster), TICKETD_TOKEN, TICKETD_CA, and TICKETD_CERT
// with TICKETD_KEY. opts come after what the environment set, so an
// explicit WithBearerToken or WithTLSConfig wins; WithHTTPClient cannot be
// combined with TICKETD_CA or TICKETD_CERT. A variable that is set but
// unusable (an unreadable CA file, a certificate without its key) is an
// ErrInvalidArgument naming it, never ignored.
func NewFromEnv(opts ...Option) (*Client, error) {
	addr := strings.TrimSpace(os.Getenv(EnvAddr))
	if addr == "" {
		return nil, invalidf("%s is not set; set it to the nodes' API URLs, comma-separated, such as http://127.0.0.1:8080", EnvAddr)
	}
	var endpoints []string
	for _, e := range strings.Split(addr, ",") {
		if e = strings.TrimSpace(e); e != "" {
			endpoints = append(endpoints, e)
		}
	}
	var envOpts []Option
	if tok := strings.TrimSpace(os.Getenv(EnvToken)); tok != "" {
		envOpts = append(envOpts, WithBearerToken(tok))
	}
	tlsCfg, err := tlsFromEnv()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		envOpts = append(envOpts, WithTLSConfig(tlsCfg))
	}
	return New(endpoints, append(envOpts, opts...)...)
}

// tlsFromEnv is the TLS configuration TICKETD_CA, TICKETD_CERT and
// TICKETD_KEY describe, or nil when none is set (the system's roots).
func tlsFromEnv() (*tls.Config, error) {
	caPath, certPath, keyPath := os.Getenv(EnvCA), os.Getenv(EnvCert), os.Getenv(EnvKey)
	if caPath == "" && certPath == "" && keyPath == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caPath != "" {
		pem, err := os.ReadFile(caPath)
		if err != nil {
			return nil, invalidf("%s: %v", EnvCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, invalidf("%s: %s holds no PEM certificate", EnvCA, caPath)
		}
		cfg.RootCAs = pool
	}
	if (certPath == "") != (keyPath == "") {
		return nil, invalidf("%s and %s go together: set both or neither", EnvCert, EnvKey)
	}
	if certPath != "" {
		cert, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, invalidf("%s/%s: %v", EnvCert, EnvKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
