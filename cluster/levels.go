package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// Feature levels (fsm/level.go) across the cluster. The leader asks every
// member in the Raft configuration, voters and non-voters, for its release
// and feature level on the Raft port (service muxLevel), every
// LevelProbeInterval. Once every member has answered with a level above the
// cluster's, it proposes that level (CommandSetFeatureLevel), so that every
// node, and a restore of any of them, agrees on it. Until then the gate in
// applyResponse keeps every entry above the cluster's level out of the log:
// an older member never meets an entry it cannot apply. This is etcd's
// cluster version and Consul's ServersMeetMinimumVersion, decided through
// the log.

// Level reports, as memberLevel.Report says them.
const (
	// LevelReported: the member answered with its release and level.
	LevelReported = "reported"
	// LevelNoReport: the member took the connection and closed it without
	// an answer, as a binary older than feature levels does; it counts as
	// fsm.LevelBase.
	LevelNoReport = "no-report"
	// LevelUnreachable: the member could not be asked; its level is not
	// known, and the cluster's level does not rise.
	LevelUnreachable = "unreachable"
)

// MemberLevel is what the level probe learned of one member.
type MemberLevel struct {
	ID      string
	Version string
	// Level is the member's feature level: fsm.LevelBase for a member
	// that reports none, 0 while it is unreachable.
	Level  fsm.FeatureLevel
	Report string
	Err    string // why it was unreachable
}

func (m MemberLevel) String() string {
	switch m.Report {
	case LevelReported:
		return fmt.Sprintf("%s (%s, level %d)", m.ID, m.Version, m.Level)
	case LevelNoReport:
		return fmt.Sprintf("%s (reports no level: a release before feature levels, counted as level %d)", m.ID, fsm.LevelBase)
	}
	return fmt.Sprintf("%s (unreachable, level not known: %s)", m.ID, m.Err)
}

// levelAnswer is the level service's answer, one JSON document.
type levelAnswer struct {
	Version      string           `json:"version"`
	FeatureLevel fsm.FeatureLevel `json:"feature_level"`
}

// ownLevel is the level this node reports (Config.FeatureLevel).
func (n *Node) ownLevel() fsm.FeatureLevel {
	if n.cfg.FeatureLevel != 0 {
		return n.cfg.FeatureLevel
	}
	return fsm.CurrentLevel
}

// Version is this node's release (Config.Version).
func (n *Node) Version() string { return n.cfg.Version }

// FeatureLevel is the highest feature level this node reports knowing.
func (n *Node) FeatureLevel() fsm.FeatureLevel { return n.ownLevel() }

// ClusterLevel is the cluster's feature level as this node has applied it.
func (n *Node) ClusterLevel() fsm.FeatureLevel { return n.fsm.ClusterLevel() }

// serveLevel answers the level service and closes the connection.
func (n *Node) serveLevel(c net.Conn) {
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(muxHeaderTimeout))
	_ = json.NewEncoder(c).Encode(levelAnswer{Version: n.cfg.Version, FeatureLevel: n.ownLevel()})
}

// askLevel asks the node at addr for its release and level.
func (n *Node) askLevel(id, addr string) MemberLevel {
	out := MemberLevel{ID: id}
	timeout := max(n.cfg.ProbeTimeout, time.Second)
	c, err := dialService(n.mux.dial, addr, muxLevel, timeout)
	if err != nil {
		out.Report, out.Err = LevelUnreachable, err.Error()
		return out
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	body, err := io.ReadAll(io.LimitReader(c, 4096))
	return readLevelAnswer(id, body, err)
}

// readLevelAnswer classifies what member id sent on the level service
// (body, and the error that ended the read): no bytes and a closed
// connection is an older binary's drop (no report, level 1); one JSON
// report of a level of at least 1 is reported; anything else leaves the
// member's level not known.
func readLevelAnswer(id string, body []byte, err error) MemberLevel {
	out := MemberLevel{ID: id}
	switch {
	case len(body) == 0 && (err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err)):
		// Dropped unanswered: an older binary (its mux does not know
		// the service).
		out.Report, out.Level = LevelNoReport, fsm.LevelBase
		return out
	case err != nil:
		out.Report, out.Err = LevelUnreachable, err.Error()
		return out
	}
	var a levelAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.FeatureLevel < fsm.LevelBase {
		out.Report, out.Err = LevelUnreachable, fmt.Sprintf("answer %q is not a level report", body)
		return out
	}
	out.Report, out.Version, out.Level = LevelReported, a.Version, a.FeatureLevel
	return out
}

// isConnReset: the peer closed with unread data (our service byte) in its
// buffer, which the kernel answers with a reset.
func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// memberLevels holds the latest probe round's answers, by member id.
type memberLevels struct {
	mu   sync.Mutex
	byID map[string]MemberLevel
}

func (m *memberLevels) set(all map[string]MemberLevel) {
	m.mu.Lock()
	m.byID = all
	m.mu.Unlock()
}

func (m *memberLevels) get(id string) (MemberLevel, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.byID[id]
	return l, ok
}

// MemberLevels is what this node's level probe last learned of every member
// (only a leader probes; empty on a node that never led).
func (n *Node) MemberLevels() []MemberLevel {
	n.levels.mu.Lock()
	defer n.levels.mu.Unlock()
	out := make([]MemberLevel, 0, len(n.levels.byID))
	for _, l := range n.levels.byID {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b MemberLevel) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// probeLevels asks every member of servers at once (this node answers for
// itself) and records the answers.
func (n *Node) probeLevels(servers []raft.Server) map[string]MemberLevel {
	out := make(map[string]MemberLevel, len(servers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range servers {
		id := string(s.ID)
		if id == n.cfg.ID {
			mu.Lock()
			out[id] = MemberLevel{ID: id, Version: n.cfg.Version, Level: n.ownLevel(), Report: LevelReported}
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := n.askLevel(id, string(s.Address))
			mu.Lock()
			out[id] = l
			mu.Unlock()
		}()
	}
	wg.Wait()
	n.levels.set(out)
	return out
}

// watchLevels runs while this node serves the stretch of leadership l: it
// probes every member's level now and every LevelProbeInterval, and raises
// the cluster's level when every member knows a higher one.
func (n *Node) watchLevels(l Leadership) {
	t := time.NewTicker(n.cfg.LevelProbeInterval)
	defer t.Stop()
	for {
		if cur, ok := n.Leadership(); !ok || cur != l {
			return
		}
		if err := n.maybeRaiseLevel(); err != nil {
			n.log.Warn("could not raise the cluster's feature level", "term", l.Term, "err", err)
		}
		select {
		case <-t.C:
		case <-n.shutdownCh:
			return
		}
	}
}

// maybeRaiseLevel probes every member and proposes the lowest level they
// report when it is above the cluster's. It holds levelMu from the probe to
// the commit, and Join holds it too, so no member joins between the
// probe and the entry with a level below it.
func (n *Node) maybeRaiseLevel() error {
	n.levelMu.Lock()
	defer n.levelMu.Unlock()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	servers := cf.Configuration().Servers
	answers := n.probeLevels(servers)
	lowest := fsm.CurrentLevel
	for _, s := range servers {
		a := answers[string(s.ID)]
		if a.Report == LevelUnreachable {
			return nil // not known: wait, as etcd does for a member it cannot ask
		}
		lowest = min(lowest, a.Level)
	}
	// A level below the one that brought CommandSetFeatureLevel is never
	// recorded: no binary that reports a level is below it.
	if lowest < fsm.LevelClusterLevel || lowest <= n.fsm.ClusterLevel() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout)
	defer cancel()
	// Ungated: the gate compares with the cluster's level, which this
	// entry raises; every member has just said it knows the level.
	resp, err := n.propose(ctx, fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: lowest}))
	if err != nil {
		return err
	}
	if err, isErr := resp.(error); isErr {
		return err
	}
	n.log.Info("raised the cluster's feature level", "level", lowest, "members", len(servers))
	return nil
}

// LevelError is why a leader refused something: it needs a feature level
// the cluster has not reached (ErrClusterUpgrading), or a joining member
// does not know the cluster's level.
type LevelError struct {
	Need, Cluster fsm.FeatureLevel
	// Behind are the members whose level is below Need (or not known),
	// as the last probe found them; for a join, the joining member.
	Behind []MemberLevel
	// What is what was refused, for the message ("a raise-sequence
	// entry"); Joining is the id of a refused joining member.
	What, Joining string
}

// ErrClusterUpgrading is what errors.Is finds in a *LevelError.
var ErrClusterUpgrading = errors.New("cluster upgrading")

func (e *LevelError) Error() string {
	names := make([]string, 0, len(e.Behind))
	for _, m := range e.Behind {
		names = append(names, m.String())
	}
	if e.Joining != "" {
		return fmt.Sprintf("the cluster is at feature level %d and joining member %s does not know it: %s; start it with a binary of level %d or later",
			e.Cluster, e.Joining, strings.Join(names, ", "), e.Cluster)
	}
	behind := "none known yet (the leader asks every member every few seconds)"
	if len(names) > 0 {
		behind = strings.Join(names, ", ")
	}
	return fmt.Sprintf("the cluster is upgrading: %s needs feature level %d and the cluster is at level %d until every member runs a release that knows it; members behind: %s",
		e.What, e.Need, e.Cluster, behind)
}

func (e *LevelError) Is(target error) bool { return target == ErrClusterUpgrading }

// gate refuses an entry that needs a level above the cluster's.
func (n *Node) gate(cmd []byte) error {
	need, err := fsm.RequiredLevel(cmd)
	if err != nil {
		return err
	}
	have := n.fsm.ClusterLevel()
	if need <= have {
		return nil
	}
	return &LevelError{Need: need, Cluster: have, Behind: n.membersBelow(need), What: featureOf(cmd)}
}

// featureOf names, for people, what an entry asks for.
func featureOf(cmd []byte) string {
	switch t := fsm.CommandType(cmd[0]) &^ fsm.IgnoreUnknownTypeFlag; t {
	case fsm.CommandReserveBlocks:
		return "a grouped block entry"
	case fsm.CommandRaiseSequence:
		return "a raise"
	case fsm.CommandCreateNamespaceV2:
		return "a namespace with a worker role or a horizon"
	case fsm.CommandLeaseV2:
		return "a lease of a chosen worker id"
	case fsm.CommandRestoreBackup:
		return "restoring this backup (its data needs a newer snapshot format)"
	default:
		return "a " + t.String() + " entry"
	}
}

// membersBelow lists the members whose last known level is below need.
func (n *Node) membersBelow(need fsm.FeatureLevel) []MemberLevel {
	var out []MemberLevel
	for _, m := range n.MemberLevels() {
		if m.Report == LevelUnreachable || m.Level < need {
			out = append(out, m)
		}
	}
	return out
}

// checkJoinLevel refuses a joining node whose binary does not know the
// cluster's level: it would stop at the entry that recorded it (or at a
// later one). levelMu is held.
func (n *Node) checkJoinLevel(id, raftAddr string) error {
	have := n.fsm.ClusterLevel()
	if have <= fsm.LevelBase {
		return nil // any release can apply a base-level log
	}
	l := n.askLevel(id, raftAddr)
	if l.Report != LevelUnreachable && l.Level >= have {
		return nil
	}
	return &LevelError{Need: have, Cluster: have, Behind: []MemberLevel{l}, Joining: id}
}
