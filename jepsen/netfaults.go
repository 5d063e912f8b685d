//go:build linux

package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/jepsen/netfault"
)

// netFaults injects network faults inside the nodes' own network
// namespaces: iptables rules in two chains of our own (TJ_IN from INPUT,
// TJ_OUT from OUTPUT), and the NFQUEUE delayer. Healing flushes the chains
// and closes the delayers. The same code serves process mode (namespaces the
// harness made) and Docker mode (the containers' namespaces, by PID).
type netFaults struct {
	b     backend
	mu    sync.Mutex
	dirty map[*Node]bool // nodes whose chains may hold rules
	delay map[*Node]*netfault.Delayer
	seed  uint64
	// What the faults did since the last takeStats: packets dropped by
	// our rules, packets held by delayers.
	dropped, delayed uint64
}

// takeStats returns and resets the packet counts.
func (f *netFaults) takeStats() (dropped, delayed uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dropped, delayed = f.dropped, f.delayed
	f.dropped, f.delayed = 0, 0
	return
}

// dropCount sums the packet counters of the DROP rules in one chain.
func (f *netFaults) dropCount(n *Node, chain string) uint64 {
	out, err := f.ipt(n, "-L", chain, "-n", "-v", "-x")
	if err != nil {
		return 0
	}
	var sum uint64
	for _, line := range strings.Split(out, "\n") {
		fl := strings.Fields(line)
		if len(fl) >= 3 && fl[2] == "DROP" {
			if v, err := strconv.ParseUint(fl[0], 10, 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func newNetFaults(b backend, seed uint64) *netFaults {
	return &netFaults{b: b, dirty: map[*Node]bool{}, delay: map[*Node]*netfault.Delayer{}, seed: seed}
}

// available reports whether network faults can be injected.
func (f *netFaults) available(n *Node) bool {
	_, err := f.b.netns(n)
	return err == nil
}

// ipt runs iptables inside n's network namespace.
func (f *netFaults) ipt(n *Node, args ...string) (string, error) {
	ns, err := f.b.netns(n)
	if err != nil {
		return "", err
	}
	return cmdRun(10*time.Second, "nsenter", append([]string{"--net=" + ns, "iptables", "-w", "5"}, args...)...)
}

// chains makes sure TJ_IN and TJ_OUT exist and are jumped to first.
func (f *netFaults) chains(n *Node) error {
	for _, c := range [][2]string{{"TJ_IN", "INPUT"}, {"TJ_OUT", "OUTPUT"}} {
		if _, err := f.ipt(n, "-S", c[0]); err != nil {
			if _, err := f.ipt(n, "-N", c[0]); err != nil {
				return err
			}
		}
		if _, err := f.ipt(n, "-C", c[1], "-j", c[0]); err != nil {
			if _, err := f.ipt(n, "-I", c[1], "1", "-j", c[0]); err != nil {
				return err
			}
		}
	}
	f.mu.Lock()
	f.dirty[n] = true
	f.mu.Unlock()
	return nil
}

// cut drops every packet between a and b, at both ends' INPUT: a silent
// loss, as in a real partition (a DROP in OUTPUT would fail the sender's
// write at once instead).
func (f *netFaults) cut(a, b *Node) error {
	ipA, err := f.b.nodeIP(a)
	if err != nil {
		return err
	}
	ipB, err := f.b.nodeIP(b)
	if err != nil {
		return err
	}
	if err := f.chains(a); err != nil {
		return err
	}
	if err := f.chains(b); err != nil {
		return err
	}
	if _, err := f.ipt(a, "-A", "TJ_IN", "-s", ipB, "-j", "DROP"); err != nil {
		return err
	}
	_, err = f.ipt(b, "-A", "TJ_IN", "-s", ipA, "-j", "DROP")
	return err
}

// partition cuts every pair of nodes that connected does not allow.
func (f *netFaults) partition(nodes []*Node, connected func(a, b *Node) bool) error {
	var errs []error
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if !connected(a, b) {
				errs = append(errs, f.cut(a, b))
			}
		}
	}
	return errors.Join(errs...)
}

// loss drops a share p of every packet n sends or receives on its link.
func (f *netFaults) loss(n *Node, p float64) error {
	if err := f.chains(n); err != nil {
		return err
	}
	prob := fmt.Sprintf("%.3f", p)
	if _, err := f.ipt(n, "-A", "TJ_IN", "-i", f.b.iface(), "-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP"); err != nil {
		return err
	}
	_, err := f.ipt(n, "-A", "TJ_OUT", "-o", f.b.iface(), "-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP")
	return err
}

// slow delays every packet n sends or receives on its link by d plus a
// random part of up to jitter (so a round trip through n grows by about
// 2d), with the NFQUEUE delayer: the kernel here has no sch_netem.
func (f *netFaults) slow(n *Node, queue uint16, d, jitter time.Duration) error {
	if err := f.startDelayer(n, queue, d, jitter); err != nil {
		return err
	}
	q := fmt.Sprint(queue)
	if _, err := f.ipt(n, "-A", "TJ_IN", "-i", f.b.iface(), "-j", "NFQUEUE", "--queue-num", q, "--queue-bypass"); err != nil {
		return err
	}
	_, err := f.ipt(n, "-A", "TJ_OUT", "-o", f.b.iface(), "-j", "NFQUEUE", "--queue-num", q, "--queue-bypass")
	return err
}

// startDelayer starts n's NFQUEUE delayer on queue; the caller sends it
// packets with iptables rules.
func (f *netFaults) startDelayer(n *Node, queue uint16, d, jitter time.Duration) error {
	ns, err := f.b.netns(n)
	if err != nil {
		return err
	}
	if err := f.chains(n); err != nil {
		return err
	}
	dl, err := netfault.StartDelayer(ns, queue, d, jitter, f.seed)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.delay[n] = dl
	f.mu.Unlock()
	return nil
}

// slowTo delays only the packets n sends to peer, by d plus a random part
// of up to jitter: one direction of one link (transfer-under-load: the
// transferee's vote request and heartbeats reach the old leader late, while
// everything else, clients included, flows as usual).
func (f *netFaults) slowTo(n, peer *Node, queue uint16, d, jitter time.Duration) error {
	ip, err := f.b.nodeIP(peer)
	if err != nil {
		return err
	}
	if err := f.startDelayer(n, queue, d, jitter); err != nil {
		return err
	}
	_, err = f.ipt(n, "-A", "TJ_OUT", "-o", f.b.iface(), "-d", ip, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(queue), "--queue-bypass")
	return err
}

// heal removes every rule and delayer. Rules of a node whose namespace is
// gone (a container that exited) went with it.
func (f *netFaults) heal() error {
	f.mu.Lock()
	nodes := make([]*Node, 0, len(f.dirty))
	for n := range f.dirty {
		nodes = append(nodes, n)
	}
	delayers := f.delay
	f.delay = map[*Node]*netfault.Delayer{}
	f.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		if _, err := f.b.netns(n); err != nil {
			// A container that is not running: its namespace, rules
			// included, is gone.
			f.mu.Lock()
			delete(f.dirty, n)
			f.mu.Unlock()
			continue
		}
		for _, c := range []string{"TJ_IN", "TJ_OUT"} {
			d := f.dropCount(n, c)
			f.mu.Lock()
			f.dropped += d
			f.mu.Unlock()
			if _, err := f.ipt(n, "-F", c); err != nil && !strings.Contains(err.Error(), "No chain") {
				errs = append(errs, err)
			}
		}
		f.mu.Lock()
		delete(f.dirty, n)
		f.mu.Unlock()
	}
	for n, d := range delayers {
		f.mu.Lock()
		f.delayed += d.Packets()
		f.mu.Unlock()
		if err := d.Close(); err != nil {
			errs = append(errs, fmt.Errorf("delayer of %s: %w", n.ID, err))
		}
	}
	return errors.Join(errs...)
}
