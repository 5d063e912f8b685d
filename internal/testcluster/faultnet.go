package testcluster

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/ticketd/ticketd/cluster"
)

// FaultNet cuts Raft links between in-process nodes for real: every Raft and
// probe connection is dialed through it, a cut node's connections are closed,
// and new dials to or from it fail. HTTP is not touched, so a client can still
// reach a node that the cluster cannot: the situation of a leader
// partitioned away with its clients.
type FaultNet struct {
	mu       sync.Mutex
	addrToID map[string]string
	isolated map[string]bool
	conns    map[string]map[net.Conn]struct{}
}

func newFaultNet() *FaultNet {
	return &FaultNet{addrToID: map[string]string{}, isolated: map[string]bool{}, conns: map[string]map[net.Conn]struct{}{}}
}

var errCut = errors.New("faultnet: link cut")

func (f *FaultNet) register(id, raftAddr string) {
	f.mu.Lock()
	f.addrToID[raftAddr] = id
	f.mu.Unlock()
}

// dialer returns node from's DialFunc.
func (f *FaultNet) dialer(from string) cluster.DialFunc {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		f.mu.Lock()
		to := f.addrToID[addr]
		cut := f.isolated[from] || f.isolated[to]
		f.mu.Unlock()
		if cut {
			return nil, errCut
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.isolated[from] || f.isolated[to] {
			_ = c.Close()
			return nil, errCut
		}
		for _, id := range []string{from, to} {
			if f.conns[id] == nil {
				f.conns[id] = map[net.Conn]struct{}{}
			}
			f.conns[id][c] = struct{}{}
		}
		return c, nil
	}
}

// Isolate cuts every Raft link of node id.
func (f *FaultNet) Isolate(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.isolated[id] = true
	for c := range f.conns[id] {
		_ = c.Close()
	}
	delete(f.conns, id)
}

// Heal restores node id's links.
func (f *FaultNet) Heal(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.isolated, id)
}
