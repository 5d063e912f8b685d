//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// bootMode says how a node's first start finds its cluster.
type bootMode int

const (
	bootInitial bootMode = iota // --initial-cluster with the first members
	bootJoin                    // --join through the current members
)

// Node is one node identity: a Raft ID with its own data. A slot (an
// address in process mode) can host several identities over a run, one at
// a time: a node whose data was wiped comes back under a new ID in the same
// slot.
type Node struct {
	Slot int
	ID   string
	// Host is how other nodes and the harness reach this node: an IP in
	// process mode, the container's DNS name on the compose network in
	// Docker mode.
	Host string
	Boot bootMode
	// JoinURLs are the API URLs a joining node asks to be added through.
	JoinURLs []string
	// ExtraArgs go after every other flag of its next start (a later
	// flag wins): a DR run slows the elections of the old nodes but one.
	ExtraArgs []string

	mu      sync.Mutex
	running bool // Docker mode; process mode asks the process (procState)
	paused  bool
	starts  int
	wiped   bool
	proc    *procState // process mode
	ctr     *ctrState  // Docker mode
}

func (n *Node) String() string { return n.ID }

// backend runs nodes: local processes or Docker containers.
type backend interface {
	// name describes the backend for the report.
	name() string
	// prepare builds the binary or image; called once.
	prepare(ctx context.Context) error
	// newNode sets up an identity in a slot (not started).
	newNode(slot int, id string, boot bootMode) (*Node, error)
	// raftAddr and apiHostPort: what nodes advertise, and where the
	// harness sends requests.
	raftAddr(n *Node) string
	httpAdvertise(n *Node) string
	apiHostPort(n *Node) string
	// start starts (or restarts, resuming its data) a stopped node; the
	// initial cluster is the list of the first members' id=raftaddr.
	start(ctx context.Context, n *Node, initial string) error
	signal(n *Node, sig syscall.Signal) error
	// waitExit waits until n's process has exited.
	waitExit(n *Node, timeout time.Duration) error
	alive(n *Node) bool
	// wipe deletes a stopped node's data.
	wipe(n *Node) error
	// netns is the path of the network namespace n runs in, for iptables
	// (via nsenter) and the delayer; "" when network faults are
	// unavailable.
	netns(n *Node) (string, error)
	// nodeIP is n's address as its peers see it, for iptables rules.
	nodeIP(n *Node) (string, error)
	// iface is the name of a node's network interface toward its peers.
	iface() string
	dial(ctx context.Context, network, addr string) (net.Conn, error)
	// storage is the nodes' own filesystems, for the storage nemeses;
	// errNoStorageFaults (or why they failed) when there are none.
	storage() (*disks, error)
	// collectLogs copies every node's logs into dir.
	collectLogs(dir string, nodes []*Node)
	teardown()
}

// errNoNetFaults: the backend cannot inject network faults.
var errNoNetFaults = errors.New("network faults are not available in this mode")

// loopbackDial dials 127.0.0.1 only (loopback mode).
func loopbackDial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := allowOnly(addr, func(ip net.IP) bool { return ip.IsLoopback() }); err != nil {
		return nil, err
	}
	return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
}

// nodeArgs is the `ticketd serve` command line shared by both backends
// (Docker adds nothing: its compose command carries the addresses, and
// the rest comes in as TICKETD_* variables).
func (c *config) timingArgs() []string {
	args := []string{
		"--heartbeat-timeout", c.Heartbeat.String(),
		"--election-timeout", c.Election.String(),
		"--leader-lease-timeout", c.Lease.String(),
		"--snapshot-threshold", fmt.Sprint(c.SnapThreshold),
		"--snapshot-interval", c.SnapInterval.String(),
		"--trailing-logs", fmt.Sprint(c.Trailing),
		"--shutdown-timeout", "5s",
		// Raft's own INFO lines say when snapshots are taken and
		// installed; the report counts them.
		"--raft-log-level", "info",
	}
	if c.MaxRPCsInFlight != 0 {
		args = append(args, "--raft-max-rpcs-in-flight", fmt.Sprint(c.MaxRPCsInFlight))
	}
	if c.LeaseReads {
		// One argument: a bool flag takes no separate value.
		args = append(args, "--lease-reads=true", "--lease-duration", c.leaseDuration().String())
	}
	if c.Faults != "" {
		args = append(args, "--unsafe-fault", c.Faults)
	}
	return args
}

// legacyTimingArgs are timingArgs for a node on an upgrade run's older
// release: the same, without --unsafe-fault (a planted bug is the new
// binary's, and the older one is a production build) and without the lease
// flags (the older release has none: its nodes answer no lease probe, and
// the cluster's feature level keeps the new ones from using leases until
// every node is replaced).
func (c *config) legacyTimingArgs() []string {
	old := *c
	old.Faults = ""
	old.LeaseReads = false
	return old.timingArgs()
}

// flagsEnv turns `ticketd serve` flags into the TICKETD_* variables every
// flag also reads (Docker mode): "--name value" and "--name=value" alike.
func flagsEnv(args []string) []string {
	var env []string
	for i := 0; i < len(args); i++ {
		name, val, ok := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		if !ok {
			if i+1 >= len(args) {
				break
			}
			i++
			val = args[i]
		}
		env = append(env, "TICKETD_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"="+val)
	}
	return env
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (n *Node) isPaused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

func (n *Node) isWiped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.wiped
}
