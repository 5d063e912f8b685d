package respapi_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/tlstest"
	"github.com/ticketd/ticketd/server"
)

// TestTLS_FrontServesTLSWhenTheAPIDoes: with the API on HTTPS (client
// certificates required), the Redis-protocol front speaks TLS with the same
// certificates, a follower forwards over HTTPS, and a plain-text client or
// one without a certificate gets nothing.
func TestTLS_FrontServesTLSWhenTheAPIDoes(t *testing.T) {
	ca := tlstest.NewCA(t, "api-ca")
	clientCert := ca.Issue(t, "client")
	clientTLS := &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{clientCert.TLS}, MinVersion: tls.VersionTLS12}
	tc := testcluster.NewWithOptions(t, 3, testcluster.Options{
		Client: clientHTTPS(clientTLS), Scheme: "https",
		Tweak: func(id string, cfg *server.Config) {
			c := ca.Issue(t, id)
			cfg.APITLS = &tls.Config{Certificates: []tls.Certificate{c.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool, MinVersion: tls.VersionTLS12}
			cfg.PeerTLS = func() *tls.Config {
				return &tls.Config{Certificates: []tls.Certificate{c.TLS}, RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
			}
			cfg.RESPAddr = "127.0.0.1:0"
		},
	})
	tc.CreateSequence("orders", nil)
	ctx := context.Background()
	var last int64
	for _, n := range tc.Running() {
		c := redis.NewClient(&redis.Options{Addr: n.Srv.RESPAddr(), TLSConfig: clientTLS.Clone(), MaxRetries: -1})
		got, err := c.IncrBy(ctx, "orders", 10).Result()
		_ = c.Close()
		if err != nil || got <= last {
			t.Fatalf("INCRBY over TLS via %s = %d, %v; want more than %d", n.ID, got, err, last)
		}
		last = got
	}
	addr := tc.Running()[0].Srv.RESPAddr()
	plain := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("a plain-text client was served by a TLS front")
	}
	noCert := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, TLSConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}})
	defer noCert.Close()
	if err := noCert.Ping(ctx).Err(); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}

func clientHTTPS(cfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}
