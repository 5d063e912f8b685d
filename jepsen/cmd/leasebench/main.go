//go:build linux

// Command leasebench runs a command (scripts/bench.sh's lease section, by
// way of scripts/lease-bench.sh) with a network of three node namespaces
// and a delay between them: issue 44's "2 ms between the nodes" rows.
//
//	leasebench --delay 2ms -- env BENCH_ONLY=lease scripts/bench.sh
//
// It makes one network namespace per node (tlb-n1..tlb-n3), each joined by
// a veth pair to a bridge on the host (tlbbr0, 10.231.79.1/24), the nodes
// at 10.231.79.11..13. Node-to-node traffic crosses the bridge; the load
// generator, on the host, reaches each node over its veth. With --delay D,
// every packet a node sends to another node's address is held D by the
// fault suite's NFQUEUE delayer (jepsen/netfault; this kernel has no
// sch_netem), one delayer per namespace, bound in it: the iptables rule in
// each namespace's OUTPUT matches only the other nodes' addresses (-d), so
// every round trip between two nodes grows by 2·D, and nothing between a
// client and a node does. What runs in a namespace is the command's choice:
// bench.sh reads LEASEBENCH_NS (the namespaces, in node order),
// LEASEBENCH_IPS (their addresses), LEASEBENCH_NET (their /24, which its
// load generator's --allow-net needs to drive redis-server and the RESP
// front off loopback) and LEASEBENCH_DELAY, and starts node
// i, its bare Echo handler and its redis-server with `ip netns exec`.
//
// Before the command it measures a TCP connect (one round trip) from node
// 1's namespace to node 2's and from the host to node 1's, so the log shows
// the delay where it belongs and nowhere else. Everything it made is
// removed on the way out (and at start, what a killed run left). When the
// bridge traffic passes the host's iptables (br_netfilter loaded, as
// Docker does, with a FORWARD policy of DROP), a rule accepting
// tlbbr0-to-tlbbr0 is inserted for the run and deleted after.
//
// It lives in the jepsen module because the delayer is the suite's. It
// must run as root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/jepsen/netfault"
)

const (
	bridge    = "tlbbr0"
	hostIP    = "10.231.79.1" // in a /24 no other interface of this host uses
	subnet    = "10.231.79.0/24"
	nsPrefix  = "tlb-n"
	vethHost  = "tlbh"
	nsVeth    = "eth0"
	queueBase = 4720
)

func nodeNS(i int) string { return fmt.Sprintf("%s%d", nsPrefix, i) }
func nodeIP(i int) string { return fmt.Sprintf("10.231.79.%d", 10+i) }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s leasebench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	delay := flag.Duration("delay", 2*time.Millisecond, "hold every packet a node sends to another node for this long (0: namespaces, no delayer)")
	nodes := flag.Int("nodes", 3, "number of node namespaces")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: leasebench [--delay 2ms] [--nodes 3] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *nodes < 2 || *nodes > 9 || *delay < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "leasebench: must run as root (network namespaces, iptables, NFQUEUE)")
		os.Exit(2)
	}
	os.Exit(run(*nodes, *delay, flag.Args()))
}

// run sets the network up, runs the command and tears the network down;
// its result is the command's exit status (1 when the setup failed).
func run(nodes int, delay time.Duration, argv []string) int {
	n := &network{nodes: nodes}
	// Stop on SIGINT/SIGTERM from here on; the command gets SIGTERM.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer n.teardown()
	if err := n.setup(delay); err != nil {
		logf("setup: %v", err)
		return 1
	}
	n.check()

	var ns, ips []string
	for i := 1; i <= nodes; i++ {
		ns = append(ns, nodeNS(i))
		ips = append(ips, nodeIP(i))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"LEASEBENCH_NS="+strings.Join(ns, " "),
		"LEASEBENCH_IPS="+strings.Join(ips, " "),
		"LEASEBENCH_HOST_IP="+hostIP,
		"LEASEBENCH_NET="+subnet,
		"LEASEBENCH_DELAY="+delay.String())
	if err := cmd.Start(); err != nil {
		logf("%v", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case s := <-sigs:
		logf("%s: stopping the command", s)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			err = <-done
		}
	}
	for i, d := range n.delayers {
		if d != nil {
			logf("%s's delayer held %d packets", nodeNS(i+1), d.Packets())
		}
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	default:
		logf("command: %v", err)
		return 1
	}
}

// network is what setup made, for teardown.
type network struct {
	nodes     int
	forwardOK bool // the FORWARD rule was inserted
	delayers  []*netfault.Delayer
}

func cmdRun(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

var forwardRule = []string{"FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"}

// removeLeftovers deletes what this or an earlier run made: the
// namespaces (with their veth ends and rules), host ends, the bridge and
// the FORWARD rule.
func removeLeftovers(nodes int) {
	for i := 1; i <= 9; i++ {
		if out, err := cmdRun("ip", "netns", "pids", nodeNS(i)); err == nil {
			for _, p := range strings.Fields(out) {
				_, _ = cmdRun("kill", "-KILL", p)
			}
			_, _ = cmdRun("ip", "netns", "del", nodeNS(i))
		}
		_, _ = cmdRun("ip", "link", "del", fmt.Sprintf("%s%d", vethHost, i))
	}
	_, _ = cmdRun("ip", "link", "del", bridge)
	for {
		if _, err := cmdRun("iptables", append([]string{"-w", "5", "-D"}, forwardRule...)...); err != nil {
			break
		}
	}
}

func (n *network) setup(delay time.Duration) error {
	removeLeftovers(n.nodes)
	steps := [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", hostIP + "/24", "dev", bridge},
		{"link", "set", bridge, "up"},
	}
	for i := 1; i <= n.nodes; i++ {
		ns, hv := nodeNS(i), fmt.Sprintf("%s%d", vethHost, i)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"link", "add", hv, "type", "veth", "peer", "name", nsVeth, "netns", ns},
			[]string{"link", "set", hv, "master", bridge},
			[]string{"link", "set", hv, "up"},
			[]string{"-n", ns, "addr", "add", nodeIP(i) + "/24", "dev", nsVeth},
			[]string{"-n", ns, "link", "set", nsVeth, "up"})
	}
	for _, s := range steps {
		if _, err := cmdRun("ip", s...); err != nil {
			return err
		}
	}
	if b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables"); err == nil && strings.TrimSpace(string(b)) == "1" {
		if _, err := cmdRun("iptables", append([]string{"-w", "5", "-I"}, forwardRule...)...); err != nil {
			return err
		}
		n.forwardOK = true
	}
	if delay <= 0 {
		return nil
	}
	for i := 1; i <= n.nodes; i++ {
		var peers []string
		for j := 1; j <= n.nodes; j++ {
			if j != i {
				peers = append(peers, nodeIP(j))
			}
		}
		q := uint16(queueBase + i)
		d, err := netfault.StartDelayer("/run/netns/"+nodeNS(i), q, delay, 0, uint64(i))
		if err != nil {
			return fmt.Errorf("%s: NFQUEUE delayer: %w", nodeNS(i), err)
		}
		n.delayers = append(n.delayers, d)
		if _, err := cmdRun("ip", "netns", "exec", nodeNS(i), "iptables", "-w", "5", "-A", "OUTPUT", "-o", nsVeth,
			"-d", strings.Join(peers, ","), "-j", "NFQUEUE", "--queue-num", fmt.Sprint(q), "--queue-bypass"); err != nil {
			return err
		}
	}
	logf("%d node namespaces on %s, %s held between node addresses", n.nodes, bridge, delay)
	return nil
}

// check logs the median TCP connect time node 1 -> node 2 and host ->
// node 1: one round trip each, so 2·delay and about 0.
func (n *network) check() {
	const port = 18999
	lnc := make(chan net.Listener, 1)
	err := netfault.InNetns("/run/netns/"+nodeNS(2), func() error {
		l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", nodeIP(2), port))
		lnc <- l
		return err
	})
	if err != nil {
		logf("check: %v", err)
		return
	}
	l := <-lnc
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	l2c := make(chan net.Listener, 1)
	if err := netfault.InNetns("/run/netns/"+nodeNS(1), func() error {
		l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", nodeIP(1), port))
		l2c <- l
		return err
	}); err != nil {
		logf("check: %v", err)
		return
	}
	l2 := <-l2c
	defer l2.Close()
	go func() {
		for {
			c, err := l2.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	nodeToNode, err1 := connectRTT("/run/netns/"+nodeNS(1), fmt.Sprintf("%s:%d", nodeIP(2), port))
	hostToNode, err2 := connectRTT("", fmt.Sprintf("%s:%d", nodeIP(1), port))
	if err := errors.Join(err1, err2); err != nil {
		logf("check: %v", err)
		return
	}
	logf("TCP connect (one round trip), median of 5: %s -> %s %s; host -> %s %s",
		nodeNS(1), nodeNS(2), nodeToNode.Round(10*time.Microsecond), nodeNS(1), hostToNode.Round(10*time.Microsecond))
}

// connectRTT dials addr 5 times from the namespace at nsPath ("" = here).
func connectRTT(nsPath, addr string) (time.Duration, error) {
	var ds []time.Duration
	dial := func() error {
		for i := 0; i < 5; i++ {
			start := time.Now()
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				return err
			}
			ds = append(ds, time.Since(start))
			_ = c.Close()
		}
		return nil
	}
	var err error
	if nsPath == "" {
		err = dial()
	} else {
		err = netfault.InNetns(nsPath, dial)
	}
	if err != nil {
		return 0, err
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

func (n *network) teardown() {
	for i, d := range n.delayers {
		_, _ = cmdRun("ip", "netns", "exec", nodeNS(i+1), "iptables", "-w", "5", "-F", "OUTPUT")
		if err := d.Close(); err != nil {
			logf("%s's delayer: %v", nodeNS(i+1), err)
		}
	}
	n.delayers = nil
	removeLeftovers(n.nodes)
}
