package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/metrics"
	"github.com/ticketd/ticketd/server"
	"github.com/ticketd/ticketd/tlsfiles"
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
	insecureRaft              *bool
	tlsReload                 *time.Duration

	// sources are the TLS files loaded by apply, kept fresh by watchTLS.
	sources []watchedTLS
}

// watchedTLS is one set of TLS files and what it secures ("raft" or "api").
type watchedTLS struct {
	listener string
	src      *tlsfiles.Source
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
		insecureRaft:  fs.Bool("insecure-plaintext-raft", false, "allow the Raft port without TLS: anyone who reaches it can read the log, write to it and take the cluster down (never in production; --dev implies it)"),
		tlsReload:     fs.Duration("tls-reload-interval", 10*time.Second, "how often certificate, key and CA files are checked for changes and reloaded (0: only on SIGHUP)"),
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
	src, err := tlsfiles.Load(tlsfiles.Files{Cert: *f.tlsCert, Key: *f.tlsKey, CA: *f.tlsCA})
	if err != nil {
		return usageError{fmt.Sprintf("--tls-cert/--tls-key/--tls-ca: %v", err)}
	}
	// Nodes call each other's APIs (forwarding, join, registration) as
	// clients with the same identity.
	cfg.APITLS = src.ServerConfig(*f.tlsClientAuth)
	cfg.PeerTLS = src.ClientConfig
	f.sources = append(f.sources, watchedTLS{"api", src})
	return nil
}

func (f *securityFlags) applyRaftTLS(cfg *server.Config) error {
	n := 0
	for _, s := range []*string{f.raftCert, f.raftKey, f.raftCA} {
		if *s != "" {
			n++
		}
	}
	switch {
	case n == 0 && (*f.insecureRaft || *f.dev):
		cfg.Logger.Warn("the Raft port speaks PLAINTEXT: anyone who reaches it can read the log, append to it, make the node allocate gigabytes with one small frame, or stop elections for good with one forged term; give --raft-tls-cert, --raft-tls-key and --raft-tls-ca in production")
		return nil
	case n == 0:
		return usageError{`the Raft port needs mutual TLS: give --raft-tls-cert, --raft-tls-key and --raft-tls-ca.
Make them with:
  ticketd tls ca create --dir certs                                   # once per cluster; keep certs/ca-key.pem off the nodes
  ticketd tls cert create --dir certs --node n1 --dns n1.example --ip 10.0.0.1   # per node: every name and IP peers dial
or pass --insecure-plaintext-raft to run without (never in production), or --dev for a development node`}
	case n != 3:
		return usageError{"mutual TLS on the Raft port needs all of --raft-tls-cert, --raft-tls-key and --raft-tls-ca"}
	case *f.insecureRaft:
		return usageError{"--insecure-plaintext-raft contradicts --raft-tls-cert/--raft-tls-key/--raft-tls-ca: give one or the other"}
	}
	src, err := tlsfiles.Load(tlsfiles.Files{Cert: *f.raftCert, Key: *f.raftKey, CA: *f.raftCA})
	if err != nil {
		return usageError{fmt.Sprintf("--raft-tls-cert/--raft-tls-key/--raft-tls-ca: %v", err)}
	}
	cfg.Cluster.TLS = &cluster.RaftTLS{Server: src.ServerConfig(true), Client: src.ClientConfig}
	f.sources = append(f.sources, watchedTLS{"raft", src})
	return nil
}

// watchTLS keeps the loaded TLS files current until stop is closed:
// reloads on SIGHUP and whenever a file changes, records each certificate's
// expiry and every reload in m, and logs both.
func (f *securityFlags) watchTLS(stop <-chan struct{}, log *slog.Logger, m *metrics.Metrics) {
	// SIGHUP is caught even without TLS files: its default action would
	// kill the node.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	triggers := make([]chan struct{}, len(f.sources))
	for i, w := range f.sources {
		triggers[i] = make(chan struct{}, 1)
		w.src.OnLoad(func(leaf *x509.Certificate) { m.SetCertificateExpiry(w.listener, leaf.NotAfter) })
		go w.src.Watch(stop, triggers[i], *f.tlsReload, func(changed bool, err error) {
			m.ObserveTLSReload(w.listener, err)
			if err != nil {
				log.Warn("TLS files cannot be loaded; the previous certificate stays in use", "listener", w.listener, "cert", w.src.Files().Cert, "err", err)
				return
			}
			if changed {
				leaf := w.src.Leaf()
				log.Info("TLS certificate reloaded", "listener", w.listener, "cert", w.src.Files().Cert, "serial", leaf.SerialNumber.Text(16), "not_after", leaf.NotAfter)
			}
		})
	}
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-stop:
				return
			case <-hup:
				if len(triggers) == 0 {
					log.Info("SIGHUP: no TLS files to reload")
				}
				for _, t := range triggers {
					select {
					case t <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
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
