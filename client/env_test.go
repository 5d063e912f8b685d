package client_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
)

// clearEnv unsets the variables NewFromEnv reads, for this test only.
func clearEnv(t *testing.T) {
	for _, k := range []string{client.EnvAddr, client.EnvToken, client.EnvCA, client.EnvCert, client.EnvKey} {
		t.Setenv(k, "")
	}
}

func TestNewFromEnv_AddrAndTokenReachTheCluster(t *testing.T) {
	f := newFake()
	defer f.Close()
	f.addSequence("orders", 1, 1<<40)
	f.set(func(f *fakeServer) { f.token = "s3cret" })
	clearEnv(t)
	// A dead endpoint first, blanks and spaces: the list is read as the CLI reads it.
	t.Setenv(client.EnvAddr, " http://127.0.0.1:1 , ,"+f.URL())
	t.Setenv(client.EnvToken, "s3cret\n")
	c, err := client.NewFromEnv(client.WithBackoff(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Reserve(ctx, "orders", 10)
	if err != nil {
		t.Fatalf("reserve through TICKETD_ADDR with TICKETD_TOKEN: %v", err)
	}
	if r.Last-r.First+1 != 10 {
		t.Fatalf("range %v, want 10 IDs", r)
	}
}

func TestNewFromEnv_ExplicitOptionWins(t *testing.T) {
	f := newFake()
	defer f.Close()
	f.addSequence("orders", 1, 1<<40)
	f.set(func(f *fakeServer) { f.token = "right" })
	clearEnv(t)
	t.Setenv(client.EnvAddr, f.URL())
	t.Setenv(client.EnvToken, "wrong")
	c, err := client.NewFromEnv(client.WithBearerToken("right"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Reserve(context.Background(), "orders", 1); err != nil {
		t.Fatalf("WithBearerToken after the environment's token: %v", err)
	}
}

func TestNewFromEnv_CAFileVerifiesTheNode(t *testing.T) {
	f := newFake()
	defer f.Close()
	f.addSequence("orders", 1, 1<<40)
	srv := httptest.NewTLSServer(f.srv.Config.Handler)
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	clearEnv(t)
	t.Setenv(client.EnvAddr, srv.URL)

	// Without the CA the node's certificate is unknown: the call fails.
	c, err := client.NewFromEnv(client.WithCallTimeout(300 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Reserve(context.Background(), "orders", 1)
	c.Close()
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without TICKETD_CA: %v, want an unavailable error about the certificate", err)
	}

	t.Setenv(client.EnvCA, ca)
	c, err = client.NewFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Reserve(context.Background(), "orders", 1); err != nil {
		t.Fatalf("with TICKETD_CA: %v", err)
	}
}

func TestNewFromEnv_BadEnvironmentNamesTheVariable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.pem")
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no addr", map[string]string{}, client.EnvAddr},
		{"blank addr", map[string]string{client.EnvAddr: " , "}, "no endpoints"},
		{"bad url", map[string]string{client.EnvAddr: "ftp://x"}, "ftp"},
		{"missing CA", map[string]string{client.EnvAddr: "https://x:1", client.EnvCA: missing}, client.EnvCA},
		{"CA not PEM", map[string]string{client.EnvAddr: "https://x:1", client.EnvCA: notPEM}, "no PEM certificate"},
		{"cert without key", map[string]string{client.EnvAddr: "https://x:1", client.EnvCert: notPEM}, client.EnvKey},
		{"bad pair", map[string]string{client.EnvAddr: "https://x:1", client.EnvCert: notPEM, client.EnvKey: notPEM}, client.EnvCert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := client.NewFromEnv()
			if err == nil {
				c.Close()
				t.Fatal("NewFromEnv accepted it")
			}
			if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want ErrInvalidArgument naming %q", err, tc.want)
			}
		})
	}
}
