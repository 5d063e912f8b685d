package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Shutdown stops the node. With transfer set, a leader first hands its
// leadership to another voter so the cluster does not wait out an election.
func (n *Node) Shutdown(ctx context.Context, transfer bool) error {
	var err error
	n.shutdownOnce.Do(func() {
		if n.started.Load() == nil {
			// Opened, never started: nothing runs but the Raft port.
			close(n.shutdownCh)
			err = errors.Join(n.closeNetwork(), n.closeStore())
			return
		}
		if transfer && n.raft.State() == raft.Leader && n.voterCount() > 1 {
			if terr := n.TransferLeadership(ctx); terr != nil {
				n.log.Warn("leadership transfer on shutdown failed", "err", terr)
			} else {
				n.log.Info("leadership transferred")
			}
		}
		n.drainFutures(ctx)
		// No promise from here on; the marker goes if none holds.
		n.promises.close()
		close(n.shutdownCh)
		n.raft.DeregisterObserver(n.observer)
		done := make(chan error, 1)
		go func() {
			err := n.stopRaft()
			n.wg.Wait()
			done <- err
		}()
		select {
		case err = <-done:
			err = errors.Join(err, n.closeNetwork(), n.closeStore())
		case <-ctx.Done():
			// Raft has not stopped by the deadline (a replication
			// goroutine stuck on a peer is one way: hashicorp/raft #612).
			// Cutting the network unblocks whatever waits on a peer; the
			// stores stay open while Raft may still write to them, and
			// the caller is about to exit.
			n.log.Error("raft did not shut down by the deadline; closing its network", "err", ctx.Err())
			nerr := n.closeNetwork()
			select {
			case rerr := <-done:
				err = errors.Join(rerr, nerr, n.closeStore())
			case <-time.After(time.Second):
			}
			err = errors.Join(fmt.Errorf("raft shutdown did not finish in time: %w", ctx.Err()), err)
		}
	})
	return err
}

// drainFutures stops new Raft requests and waits, while Raft still runs,
// for those in flight to be answered: committed entries reach the FSM and
// answer their callers; those that cannot commit are answered when this
// leader steps down, within its lease timeout. The wait is bounded by ctx
// and by an election and a lease timeout more than that takes, so a Raft
// that never answers cannot hold a shutdown.
func (n *Node) drainFutures(ctx context.Context) {
	n.futuresMu.Lock()
	n.closing = true
	n.futuresMu.Unlock()
	drained := make(chan struct{})
	go func() {
		n.futures.Wait()
		close(drained)
	}()
	bound := time.NewTimer(2*n.cfg.ElectionTimeout + n.cfg.LeaderLeaseTimeout)
	defer bound.Stop()
	select {
	case <-drained:
	case <-bound.C:
		n.log.Warn("shutting down with Raft requests still unanswered")
	case <-ctx.Done():
	}
}

// closeNetwork closes the Raft port and every connection of this node.
func (n *Node) closeNetwork() error {
	var errs []error
	if n.probeClient != nil {
		n.probeClient.closeAll()
	}
	if n.leaseClient != nil {
		n.leaseClient.closeAll()
	}
	if n.watch != nil {
		n.watch.close()
	}
	if n.trans != nil {
		errs = append(errs, n.trans.Close())
		// Close does not touch the pooled outgoing connections: the
		// peers' handlers of them would wait for this node forever.
		n.trans.CloseStreams()
	}
	if n.probeServer != nil {
		n.probeServer.Close()
	}
	n.certConns.Close()
	n.leaseConns.Close()
	if n.mux != nil {
		errs = append(errs, n.mux.Close())
	}
	return errors.Join(errs...)
}

func (n *Node) closeStore() error {
	if n.store != nil {
		return n.store.Close()
	}
	return nil
}
