package cluster

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// RaftTLS secures the Raft port (Raft traffic and leadership probes) with
// mutual TLS: a node accepts only peers with a certificate signed by the
// cluster's CA, and dials only peers that present one. So a host without
// the CA can neither join nor speak Raft.
type RaftTLS struct {
	// Server is used on accepted connections; it must require and verify
	// client certificates (tls.RequireAndVerifyClientCert).
	Server *tls.Config
	// Client returns the config for one dialed connection (called per
	// dial, so certificates and CAs reloaded from disk take effect on the
	// next connection); ServerName is set per peer from the address dialed.
	Client func() *tls.Config
}

// StaticClient is a RaftTLS.Client that always uses cfg.
func StaticClient(cfg *tls.Config) func() *tls.Config {
	return func() *tls.Config { return cfg }
}

func (t *RaftTLS) validate() error {
	if t.Server == nil || t.Client == nil {
		return fmt.Errorf("raft TLS needs both a server and a client config")
	}
	if t.Server.ClientAuth != tls.RequireAndVerifyClientCert {
		return fmt.Errorf("raft TLS must require and verify client certificates")
	}
	return nil
}

// tlsDial wraps dial so that every connection is a verified TLS client
// connection, handshaken before it is used.
func tlsDial(dial DialFunc, config func() *tls.Config) DialFunc {
	return func(address string, timeout time.Duration) (net.Conn, error) {
		raw, err := dial(address, timeout)
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
		c := config().Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		conn := tls.Client(raw, c)
		_ = conn.SetDeadline(time.Now().Add(timeout))
		if err := conn.Handshake(); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", address, err)
		}
		_ = conn.SetDeadline(time.Time{})
		return conn, nil
	}
}
