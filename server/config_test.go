package server_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/server"
)

func validConfig() server.Config {
	cfg := server.DefaultConfig()
	cfg.Cluster.ID = "n1"
	cfg.Cluster.DataDir = "/var/lib/ticketd"
	cfg.Cluster.RaftAddr = "127.0.0.1:7000"
	cfg.Cluster.Bootstrap = true
	cfg.HTTPAddr = "127.0.0.1:8080"
	return cfg
}

func TestConfigValidate_Accepts(t *testing.T) {
	for name, tweak := range map[string]func(*server.Config){
		"defaults with addresses": func(*server.Config) {},
		"wildcard listen, advertised": func(c *server.Config) {
			c.HTTPAddr = "0.0.0.0:8080"
			c.HTTPAdvertise = "node1.example:8080"
		},
		"port chosen at listen": func(c *server.Config) { c.HTTPAddr = "127.0.0.1:0" },
		"join URLs":             func(c *server.Config) { c.Join = []string{"http://10.0.0.1:8080", "https://n2:8443/"} },
	} {
		cfg := validConfig()
		tweak(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Every bad setting is named, and all of them at once, before anything is
// opened: the binary turns these into usage errors.
func TestConfigValidate_NamesEachProblem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tweak func(*server.Config)
		want  []string
	}{
		{"no HTTP address", func(c *server.Config) { c.HTTPAddr = "" }, []string{"HTTP address is empty"}},
		{"wildcard without advertise", func(c *server.Config) { c.HTTPAddr = "0.0.0.0:8080" }, []string{"0.0.0.0:8080 is not reachable", "advertise"}},
		{"empty host", func(c *server.Config) { c.HTTPAddr = ":8080" }, []string{":8080 is not reachable"}},
		{"advertise not host:port", func(c *server.Config) { c.HTTPAdvertise = "node1" }, []string{`HTTP address "node1"`}},
		{"cluster: no id, no raft address", func(c *server.Config) { c.Cluster.ID = ""; c.Cluster.RaftAddr = "" }, []string{"node id is empty", "raft address is empty"}},
		{"cluster: bootstrap and initial cluster", func(c *server.Config) {
			c.Cluster.InitialCluster = []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:7000"}}
		}, []string{"exclusive"}},
		{"join URL without scheme", func(c *server.Config) { c.Join = []string{"10.0.0.1:8080"} }, []string{`join URL "10.0.0.1:8080"`}},
		{"request timeout", func(c *server.Config) { c.RequestTimeout = 0 }, []string{"request timeout must be positive"}},
		{"audit interval", func(c *server.Config) { c.AuditInterval = -time.Second }, []string{"intervals must be positive"}},
		{"issuer blocks", func(c *server.Config) { c.Issuer.MinBlock = 10; c.Issuer.MaxBlock = 5 }, []string{"min (10) <= max (5)"}},
		{"issuer divisor", func(c *server.Config) { c.Issuer.SpanDivisor = 0 }, []string{"span divisor (0)"}},
		{"two problems at once", func(c *server.Config) { c.RequestTimeout = 0; c.Cluster.DataDir = "" }, []string{"request timeout", "data dir is empty"}},
	} {
		cfg := validConfig()
		tc.tweak(&cfg)
		err := cfg.Validate()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// Start refuses an invalid config before it listens on anything.
func TestStart_RefusesInvalidConfigBeforeListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cfg := validConfig()
	cfg.HTTPAddr = addr
	cfg.Cluster.DataDir = t.TempDir()
	cfg.RequestTimeout = 0
	if _, err := server.Start(cfg); err == nil || !strings.Contains(err.Error(), "request timeout") {
		t.Fatalf("Start: got %v, want the request timeout named", err)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the HTTP address was left in use: %v", err)
	}
	_ = ln.Close()
}
