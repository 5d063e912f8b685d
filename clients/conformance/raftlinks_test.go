package main

import (
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echo is a TCP server that echoes each connection, standing in for a
// node's Raft port.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip reports whether a byte sent through conn comes back.
func roundTrip(conn net.Conn) bool {
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte{'R'}); err != nil {
		return false
	}
	b := make([]byte, 1)
	_, err := io.ReadFull(conn, b)
	return err == nil && b[0] == 'R'
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The proxies find the dialing process through /proc: this test's process
// plays node n1 dialing n2's and n3's proxies. Cutting n1 off closes its
// connections and refuses new ones, both to it and from it; cutting n2 off
// leaves n1's link to n3 alone; healing lets n1 through again.
func TestRaftLinks_IsolateCutsTheNodeBothWays(t *testing.T) {
	seen := make(chan string, 16)
	links := &raftLinks{dialer: func(c net.Conn) string {
		d := dialerOf(c, map[string]int{"n1": os.Getpid(), "n9": 1})
		select {
		case seen <- d:
		default:
		}
		return d
	}}
	t.Cleanup(links.close)
	to := map[string]string{}
	for _, id := range []string{"n1", "n2", "n3"} {
		adv, err := links.add(id, echo(t))
		if err != nil {
			t.Fatal(err)
		}
		to[id] = adv
	}

	toN2 := dial(t, to["n2"])
	if !roundTrip(toN2) {
		t.Fatal("n1 -> n2: no round trip before any cut")
	}
	if d := <-seen; d != "n1" {
		t.Fatalf("the proxy found the dialer %q, want n1 (this process)", d)
	}

	links.isolate("n2")
	if toN3 := dial(t, to["n3"]); !roundTrip(toN3) {
		t.Fatal("n1 -> n3 cut while only n2 was cut off")
	}
	if roundTrip(toN2) {
		t.Fatal("n1 -> n2 still carried after n2 was cut off")
	}

	links.isolate("n1")
	if roundTrip(dial(t, to["n3"])) {
		t.Fatal("a new connection from n1 carried while n1 was cut off")
	}
	if roundTrip(dial(t, to["n1"])) {
		t.Fatal("a connection to n1 carried while n1 was cut off")
	}

	if refused := links.heal(); refused != 0 {
		t.Errorf("%d connections had no known dialer", refused)
	}
	if !roundTrip(dial(t, to["n2"])) {
		t.Fatal("n1 -> n2 not carried after the heal")
	}
}

// A connection whose dialer is no node is refused during a cut (it might
// be the isolated node's) and carried otherwise.
func TestRaftLinks_UnknownDialer_RefusedOnlyDuringACut(t *testing.T) {
	links := &raftLinks{dialer: func(net.Conn) string { return "" }}
	t.Cleanup(links.close)
	adv, err := links.add("n2", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	if !roundTrip(dial(t, adv)) {
		t.Fatal("not carried without a cut")
	}
	links.isolate("n3")
	if roundTrip(dial(t, adv)) {
		t.Fatal("carried during a cut")
	}
	if refused := links.heal(); refused != 1 {
		t.Errorf("refused %d, want 1", refused)
	}
}

func TestProcAddr_AsProcNetTCPWritesIt(t *testing.T) {
	got, err := procAddr("127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	// Little-endian hosts (amd64, arm64) print 127.0.0.1 as 0100007F.
	if got != "0100007F:1F90" {
		t.Errorf("procAddr = %s", got)
	}
}
