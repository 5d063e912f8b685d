package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// raftLinks stand between the nodes' Raft ports, so that the nemesis can
// cut one node off from its peers while clients still reach its HTTP API:
// an old leader that has not yet learned it was deposed, met by a client
// library (issue 48). Every node advertises (and is dialled at) a proxy of
// its own in front of its Raft port, which carries Raft, the leader's
// quorum probes and everything else nodes say to each other. To cut a node
// off in both directions the proxies must know who dialled each
// connection, and on loopback every dialer's address is 127.0.0.1: a
// proxy asks the kernel instead (dialerOf), through /proc, which node's
// process holds the other end. This needs Linux and no root, and leaves the
// nodes' code and flags exactly as in production (only --raft-advertise
// names the proxy, as it would a load balancer or NAT address).
type raftLinks struct {
	// dialer names the node that dialled a connection a proxy accepted,
	// "" if none could be found.
	dialer func(net.Conn) string

	mu       sync.Mutex
	isolated string // the node cut off from its peers; "" when none is
	proxies  []*raftProxy
	// unknown counts connections refused during a cut because no node
	// could be found for them (a dialer that had already closed its end).
	unknown int
}

// raftProxy fronts one node's Raft port.
type raftProxy struct {
	links  *raftLinks
	node   string // the node whose port this is
	target string // its Raft port
	ln     net.Listener
	wg     sync.WaitGroup
	conns  map[net.Conn]string // every connection it carries (both sides) -> the node that dialled; under links.mu
}

// add starts a proxy for node's Raft port at target and returns the
// address the node advertises.
func (l *raftLinks) add(node, target string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	p := &raftProxy{links: l, node: node, target: target, ln: ln, conns: map[net.Conn]string{}}
	l.mu.Lock()
	l.proxies = append(l.proxies, p)
	l.mu.Unlock()
	p.wg.Add(1)
	go p.accept()
	return ln.Addr().String(), nil
}

// cutLocked: whether a connection from one node to another is cut.
func (l *raftLinks) cutLocked(from, to string) bool {
	return l.isolated != "" && (from == l.isolated || to == l.isolated || from == "")
}

// isolate cuts node off from its peers, both ways, closing every
// connection it has with them, until heal.
func (l *raftLinks) isolate(node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.isolated = node
	for _, p := range l.proxies {
		for c, from := range p.conns {
			if l.cutLocked(from, p.node) {
				_ = c.Close()
				delete(p.conns, c)
			}
		}
	}
}

// heal ends the cut; it returns how many connections were refused during
// it because no node could be found for them.
func (l *raftLinks) heal() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.isolated = ""
	n := l.unknown
	l.unknown = 0
	return n
}

// close stops every proxy and waits for their goroutines.
func (l *raftLinks) close() {
	l.mu.Lock()
	ps := l.proxies
	for _, p := range ps {
		_ = p.ln.Close()
		for c := range p.conns {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
	l.mu.Unlock()
	for _, p := range ps {
		p.wg.Wait()
	}
}

func (p *raftProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

// track adds the connection unless its link is cut (then it closes it).
func (p *raftProxy) track(c net.Conn, from string) bool {
	l := p.links
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cutLocked(from, p.node) {
		if from == "" {
			l.unknown++
		}
		_ = c.Close()
		return false
	}
	p.conns[c] = from
	return true
}

func (p *raftProxy) untrack(cs ...net.Conn) {
	p.links.mu.Lock()
	defer p.links.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *raftProxy) pipe(down net.Conn) {
	defer p.wg.Done()
	from := p.links.dialer(down)
	if !p.track(down, from) {
		return
	}
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		p.untrack(down)
		return
	}
	if !p.track(up, from) {
		p.untrack(down)
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	p.untrack(down, up) // ends the other copy too
	<-done
}

// dialerOf is the node whose process holds the other end of conn, a
// loopback TCP connection a proxy accepted, or "" if none does. The
// kernel's socket table (/proc/net/tcp) gives the inode of the socket
// whose local address is conn's remote one and whose remote address is
// conn's local one; the node whose /proc/<pid>/fd has a link to
// socket:[inode] dialled it.
func dialerOf(conn net.Conn, pids map[string]int) string {
	inode, err := socketInode(conn.RemoteAddr().String(), conn.LocalAddr().String())
	if err != nil || inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	for node, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && link == want {
				return node
			}
		}
	}
	return ""
}

// socketInode finds, in /proc/net/tcp, the inode of the IPv4 socket with
// the given local and remote addresses ("" if there is none).
func socketInode(local, remote string) (string, error) {
	l, err := procAddr(local)
	if err != nil {
		return "", err
	}
	r, err := procAddr(remote)
	if err != nil {
		return "", err
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		fs := strings.Fields(sc.Text())
		if len(fs) > 9 && fs[1] == l && fs[2] == r {
			return fs[9], nil
		}
	}
	return "", sc.Err()
}

// procAddr writes an IPv4 host:port as /proc/net/tcp does: the address
// as one 32-bit word in the host's byte order, in hex, and the port in hex.
func procAddr(hostport string) (string, error) {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return "", err
	}
	if !ap.Addr().Unmap().Is4() {
		return "", fmt.Errorf("%s: the Raft proxies handle IPv4 only", hostport)
	}
	ip := ap.Addr().Unmap().As4()
	return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip[:]), ap.Port()), nil
}
