//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/ticketd/ticketd/jepsen/netfault"
)

// The remote standby's link: a network namespace of its own (standbyNS)
// joined to the host by one veth pair. The voters listen on the host end's
// address (hostIP), so their traffic among themselves and with the load
// generator stays on the host's loopback route, and only what crosses the
// veth — the standby's Raft and HTTP traffic — can be delayed.
//
// The delay is applied to what the standby sends (its namespace's OUTPUT
// on its veth end): the same as `tc qdisc add dev <standby's veth> root
// netem delay D`, which delays a device's egress only, so every round
// trip between the primary and the standby grows by D and nothing else
// does. This kernel has no sch_netem ("Specified qdisc kind is unknown"),
// so, as the fault suite does (jepsen/netfaults.go slow), the delay is the
// NFQUEUE delayer of jepsen/netfault: packets leave in order, each held D.
const (
	standbyNS  = "tsbench-sb"
	hostVeth   = "tsbench0"
	nsVeth     = "eth0"
	hostIP     = "10.231.78.1" // a /30 no other interface of this host uses
	standbyIP  = "10.231.78.2"
	delayQueue = 4711
)

// cmdRun runs a short host command with a timeout.
func cmdRun(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func ip(args ...string) error {
	_, err := cmdRun(10*time.Second, "ip", args...)
	return err
}

// link is the standby's namespace and, once delay is called, its delayer.
type link struct {
	delayer *netfault.Delayer
}

// removeLink deletes what a run (this one, or one that died) left: the
// namespace (with it its veth end, the peer and the iptables rules) and a
// host end that outlived it.
func removeLink() {
	if out, err := cmdRun(5*time.Second, "ip", "netns", "pids", standbyNS); err == nil {
		for _, p := range strings.Fields(out) {
			_, _ = cmdRun(5*time.Second, "kill", "-KILL", p)
		}
	}
	_ = ip("netns", "del", standbyNS)
	_ = ip("link", "del", hostVeth)
}

// newLink creates the namespace and the veth pair and gives both ends
// their addresses.
func newLink() (*link, error) {
	removeLink()
	steps := [][]string{
		{"netns", "add", standbyNS},
		{"-n", standbyNS, "link", "set", "lo", "up"},
		{"link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth, "netns", standbyNS},
		{"addr", "add", hostIP + "/30", "dev", hostVeth},
		{"link", "set", hostVeth, "up"},
		{"-n", standbyNS, "addr", "add", standbyIP + "/30", "dev", nsVeth},
		{"-n", standbyNS, "link", "set", nsVeth, "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			removeLink()
			return nil, err
		}
	}
	return &link{}, nil
}

// prefix is the wrapper that starts a process inside the namespace (it
// execs the binary, so the PID is the process's own).
func (l *link) prefix() []string { return []string{"ip", "netns", "exec", standbyNS} }

// delay holds every packet the standby sends for d.
func (l *link) delay(d time.Duration) error {
	if l.delayer != nil {
		return fmt.Errorf("delay already on")
	}
	dl, err := netfault.StartDelayer("/run/netns/"+standbyNS, delayQueue, d, 0, 1)
	if err != nil {
		return fmt.Errorf("NFQUEUE delayer: %w", err)
	}
	l.delayer = dl
	_, err = cmdRun(10*time.Second, "ip", "netns", "exec", standbyNS, "iptables", "-w", "5",
		"-A", "OUTPUT", "-o", nsVeth, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(delayQueue), "--queue-bypass")
	if err != nil {
		_ = l.undelay()
	}
	return err
}

// undelay removes the rule, then the delayer (which lets go of what it
// still holds), and returns how many packets it delayed.
func (l *link) undelay() error {
	if l.delayer == nil {
		return nil
	}
	_, err := cmdRun(10*time.Second, "ip", "netns", "exec", standbyNS, "iptables", "-w", "5", "-F", "OUTPUT")
	if cerr := l.delayer.Close(); err == nil {
		err = cerr
	}
	l.delayer = nil
	return err
}

// delayedPackets is what the delayer has held so far.
func (l *link) delayedPackets() uint64 {
	if l.delayer == nil {
		return 0
	}
	return l.delayer.Packets()
}

func (l *link) close() {
	_ = l.undelay()
	removeLink()
}

// connectRTT is the median time of a few TCP connects to addr: a connect
// takes one round trip, so it shows the delay on the standby's link (and
// that none is on a loopback standby's).
func connectRTT(addr string) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < 5; i++ {
		start := time.Now()
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(start))
		_ = c.Close()
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}
