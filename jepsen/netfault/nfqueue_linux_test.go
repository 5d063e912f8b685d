//go:build linux

package netfault

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParsePacketIDs(t *testing.T) {
	// Two NFQNL_MSG_PACKET messages, each with a packet header attribute
	// and one unrelated attribute, then a truncated tail.
	msg := func(id uint32) []byte {
		attrs := append(attr(9, []byte{1, 2, 3}), attr(nfqaPacketHdr, append(be32(id), 0x08, 0x00, 3))...)
		b := make([]byte, 20, 20+len(attrs))
		b = append(b, attrs...)
		putHdr(b, uint16(nfnlSubsysQueue<<8|nfqnlMsgPacket))
		return b
	}
	in := append(msg(7), msg(8)...)
	in = append(in, 0xff, 0xff)
	ids := parsePacketIDs(in)
	if len(ids) != 2 || ids[0] != 7 || ids[1] != 8 {
		t.Fatalf("ids = %v, want [7 8]", ids)
	}
	if got := parsePacketIDs([]byte{1, 2, 3}); len(got) != 0 {
		t.Fatalf("short input gave %v", got)
	}
}

func putHdr(b []byte, typ uint16) {
	b[0], b[1], b[2], b[3] = byte(len(b)), byte(len(b)>>8), 0, 0
	b[4], b[5] = byte(typ), byte(typ>>8)
}

// TestDelayer_RealNamespaces needs root and JEPSEN_NETNS_TESTS=1: it makes two
// network namespaces joined by a veth pair, delays one side's output by
// 40 ms and measures a TCP round trip.
func TestDelayer_RealNamespaces(t *testing.T) {
	if os.Getuid() != 0 || os.Getenv("JEPSEN_NETNS_TESTS") == "" {
		t.Skip("needs root and JEPSEN_NETNS_TESTS=1")
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	const a, b = "tjepsen-utest-a", "tjepsen-utest-b"
	_ = exec.Command("ip", "netns", "del", a).Run()
	_ = exec.Command("ip", "netns", "del", b).Run()
	run("ip", "netns", "add", a)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", a).Run() })
	run("ip", "netns", "add", b)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", b).Run() })
	run("ip", "-n", a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b)
	run("ip", "-n", a, "addr", "add", "10.231.99.1/24", "dev", "eth0")
	run("ip", "-n", b, "addr", "add", "10.231.99.2/24", "dev", "eth0")
	run("ip", "-n", a, "link", "set", "eth0", "up")
	run("ip", "-n", b, "link", "set", "eth0", "up")

	var ln net.Listener
	if err := InNetns("/run/netns/"+b, func() (err error) {
		ln, err = net.Listen("tcp", "10.231.99.2:7000")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	var conn net.Conn
	if err := InNetns("/run/netns/"+a, func() (err error) {
		conn, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(context.Background(), "tcp", "10.231.99.2:7000")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	rtt := func() time.Duration {
		t.Helper()
		start := time.Now()
		if _, err := conn.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	if d := rtt(); d > 20*time.Millisecond {
		t.Fatalf("baseline RTT %v", d)
	}
	dl, err := StartDelayer("/run/netns/"+a, 4242, 40*time.Millisecond, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	run("ip", "netns", "exec", a, "iptables", "-A", "OUTPUT", "-o", "eth0", "-j", "NFQUEUE", "--queue-num", "4242", "--queue-bypass")
	for i := 0; i < 5; i++ {
		if d := rtt(); d < 40*time.Millisecond || d > 400*time.Millisecond {
			t.Fatalf("delayed RTT %v, want about 40ms", d)
		}
	}
	run("ip", "netns", "exec", a, "iptables", "-D", "OUTPUT", "-o", "eth0", "-j", "NFQUEUE", "--queue-num", "4242", "--queue-bypass")
	if err := dl.Close(); err != nil {
		t.Fatal(err)
	}
	if dl.Packets() == 0 {
		t.Fatal("delayer saw no packets")
	}
	if d := rtt(); d > 20*time.Millisecond {
		t.Fatalf("RTT after close %v", d)
	}
}
