package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/server"
)

// securityFlags are serve's flags for authentication, TLS and limits.
type securityFlags struct {
	dev           *bool
	tokensFile    *string
	metricsPublic *bool
	maxInflight   *int

	tlsCert, tlsKey, tlsCA *string
	tlsClientAuth          *bool

	raftCert, raftKey, raftCA *string
}

func addSecurityFlags(fs *flag.FlagSet) *securityFlags {
	return &securityFlags{
		dev:           fs.Bool("dev", false, "development mode: no authentication (never in production)"),
		tokensFile:    fs.String("tokens-file", "", `file of bearer tokens, one "SCOPES TOKEN" per line (scopes: reserve, admin); or set TICKETD_TOKENS to the same text`),
		metricsPublic: fs.Bool("metrics-public", false, "serve /metrics without a token"),
		maxInflight:   fs.Int("max-inflight", 4096, "requests in progress on this node beyond which it answers 429"),
		tlsCert:       fs.String("tls-cert", "", "certificate (PEM) for HTTPS on the API"),
		tlsKey:        fs.String("tls-key", "", "private key (PEM) for --tls-cert"),
		tlsCA:         fs.String("tls-ca", "", "CA (PEM) that signed the nodes' API certificates (and, with --tls-client-auth, the clients')"),
		tlsClientAuth: fs.Bool("tls-client-auth", false, "require API clients to present a certificate signed by --tls-ca"),
		raftCert:      fs.String("raft-tls-cert", "", "certificate (PEM) for mutual TLS on the Raft port"),
		raftKey:       fs.String("raft-tls-key", "", "private key (PEM) for --raft-tls-cert"),
		raftCA:        fs.String("raft-tls-ca", "", "CA (PEM) that signed every node's Raft certificate"),
	}
}

// apply fills cfg's security settings from the flags and environment.
func (f *securityFlags) apply(cfg *server.Config) error {
	cfg.MetricsPublic = *f.metricsPublic
	cfg.MaxInflight = *f.maxInflight
	if err := f.applyTokens(cfg); err != nil {
		return err
	}
	if err := f.applyAPITLS(cfg); err != nil {
		return err
	}
	return f.applyRaftTLS(cfg)
}

func (f *securityFlags) applyTokens(cfg *server.Config) error {
	var text string
	switch env, inEnv := os.LookupEnv("TICKETD_TOKENS"); {
	case *f.tokensFile != "" && inEnv:
		return usageError{"give tokens either with --tokens-file or in TICKETD_TOKENS, not both"}
	case *f.tokensFile != "":
		b, err := os.ReadFile(*f.tokensFile)
		if err != nil {
			return usageError{fmt.Sprintf("--tokens-file: %v", err)}
		}
		text = string(b)
	case inEnv:
		// An environment variable holds one line easily: ';' separates
		// entries there.
		text = strings.ReplaceAll(env, ";", "\n")
	}
	if text == "" {
		if *f.dev {
			cfg.Logger.Warn("development mode: authentication is OFF; anyone who reaches this node can reserve, create sequences and change membership")
			return nil
		}
		return usageError{"authentication is on by default: give --tokens-file (or TICKETD_TOKENS), or --dev for a development node without auth"}
	}
	if *f.dev {
		return usageError{"--dev turns authentication off; it cannot be combined with tokens"}
	}
	tokens, err := auth.Parse(strings.NewReader(text))
	if err != nil {
		return usageError{"tokens: " + err.Error()}
	}
	if tokens.AdminToken() == "" {
		return usageError{"tokens: at least one admin token is needed: nodes use it to join and to register their address"}
	}
	cfg.Tokens = tokens
	return nil
}

func loadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func (f *securityFlags) applyAPITLS(cfg *server.Config) error {
	if *f.tlsCert == "" && *f.tlsKey == "" {
		if *f.tlsClientAuth || *f.tlsCA != "" {
			return usageError{"--tls-ca and --tls-client-auth need --tls-cert and --tls-key"}
		}
		return nil
	}
	if *f.tlsCert == "" || *f.tlsKey == "" || *f.tlsCA == "" {
		return usageError{"HTTPS needs --tls-cert, --tls-key and --tls-ca (the CA other nodes' certificates are checked against)"}
	}
	cert, err := tls.LoadX509KeyPair(*f.tlsCert, *f.tlsKey)
	if err != nil {
		return usageError{fmt.Sprintf("--tls-cert/--tls-key: %v", err)}
	}
	ca, err := loadCA(*f.tlsCA)
	if err != nil {
		return usageError{fmt.Sprintf("--tls-ca: %v", err)}
	}
	cfg.APITLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	cfg.PeerTLS = &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12}
	if *f.tlsClientAuth {
		cfg.APITLS.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.APITLS.ClientCAs = ca
		cfg.PeerTLS.Certificates = []tls.Certificate{cert}
	}
	return nil
}

func (f *securityFlags) applyRaftTLS(cfg *server.Config) error {
	n := 0
	for _, s := range []*string{f.raftCert, f.raftKey, f.raftCA} {
		if *s != "" {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case 3:
	default:
		return usageError{"mutual TLS on the Raft port needs all of --raft-tls-cert, --raft-tls-key and --raft-tls-ca"}
	}
	cert, err := tls.LoadX509KeyPair(*f.raftCert, *f.raftKey)
	if err != nil {
		return usageError{fmt.Sprintf("--raft-tls-cert/--raft-tls-key: %v", err)}
	}
	ca, err := loadCA(*f.raftCA)
	if err != nil {
		return usageError{fmt.Sprintf("--raft-tls-ca: %v", err)}
	}
	cfg.Cluster.TLS = &cluster.RaftTLS{
		Server: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca, MinVersion: tls.VersionTLS12},
		Client: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca, MinVersion: tls.VersionTLS12},
	}
	return nil
}

// clientTLS builds the TLS config of the client commands.
func clientTLS(caPath, certPath, keyPath string) (*tls.Config, error) {
	if caPath == "" && certPath == "" && keyPath == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caPath != "" {
		ca, err := loadCA(caPath)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--ca: %v", err)}
		}
		c.RootCAs = ca
	}
	if (certPath == "") != (keyPath == "") {
		return nil, usageError{"--cert and --key go together"}
	}
	if certPath != "" {
		cert, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--cert/--key: %v", err)}
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// clientToken reads the client commands' token: --token-file, else
// TICKETD_TOKEN. Never a flag value: it would show in process listings.
func clientToken(tokenFile string) (string, error) {
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", usageError{fmt.Sprintf("--token-file: %v", err)}
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", usageError{"--token-file is empty"}
		}
		return tok, nil
	}
	return strings.TrimSpace(os.Getenv("TICKETD_TOKEN")), nil
}

var errNoEndpoint = errors.New("no endpoint could serve the request")
