package fsm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// FeatureLevel names what a ticketd binary knows: the log entry types it can
// apply and the snapshot formats it can read. The cluster has a level too,
// decided by the leader through the log (CommandSetFeatureLevel) once every
// member reports that it knows it; a leader proposes an entry, and a node
// writes a snapshot, only of a level the cluster has reached. So an older
// binary never meets an entry it cannot read, and until the level rises
// every node can go back to the older binary (see DESIGN.md, "Upgrades").
type FeatureLevel uint32

// Levels, oldest first. Adding a log entry type or a snapshot format means
// adding a level here (or using one no cluster has reached yet) and
// declaring it in entryTypeLevels or snapshotFormatLevels; a test fails
// for a type that decodeCommand knows and entryTypeLevels does not.
const (
	// LevelBase is what ticketd knew before grouped blocks (commit
	// 9c31607): entry types 1 to 10, snapshot formats up to 4. A member
	// whose binary reports no level counts as this one.
	// (api.BaseFeatureLevel mirrors it for the wire; a test holds them
	// equal, and the FSM's rules never take it from the wire package.)
	LevelBase FeatureLevel = 1
	// LevelRaiseAndShards added grouped blocks (11), raise (12), namespaces
	// with a worker role or horizon (13) and leases of a chosen worker id
	// (14), and snapshot format 5. Binaries of that release report no
	// level, so a cluster never records this level by itself: it is where
	// their features are declared.
	LevelRaiseAndShards FeatureLevel = 2
	// LevelClusterLevel added the cluster's feature level: entry type 15
	// and snapshot format 6 (which carries it).
	LevelClusterLevel FeatureLevel = 3
	// LevelStandby added the disaster-recovery standby (issue #34): entry
	// type 16 and snapshot format 7 (which carries the standby, its
	// promotions and a fence).
	LevelStandby FeatureLevel = 4
	// LevelPromotionRest added the namespaces' rest after a promotion with
	// --advance (issue 42): entry type 17 and snapshot format 8.
	LevelPromotionRest FeatureLevel = 5
	// LevelLeases added leader leases (issue 44): no entry type and no
	// snapshot format, but the Raft port's lease service, which a leader
	// asks every voter for its promise; a member of an older release
	// drops the connection, so a leader uses leases only at this level.
	LevelLeases FeatureLevel = 6

	// CurrentLevel is the highest level this binary knows.
	CurrentLevel = LevelLeases
)

// entryTypeLevels is the level each log entry type needs: one place to
// declare a new type's.
var entryTypeLevels = map[CommandType]FeatureLevel{
	CommandCreateSequence:    LevelBase,
	CommandReserveBlock:      LevelBase,
	CommandSetMember:         LevelBase,
	CommandRemoveMember:      LevelBase,
	CommandCreateNamespace:   LevelBase,
	CommandAcquireLease:      LevelBase,
	CommandRenewLease:        LevelBase,
	CommandReleaseLease:      LevelBase,
	CommandRestoreBackup:     LevelBase, // and its backup's format's level: see RequiredLevel
	CommandLease:             LevelBase,
	CommandReserveBlocks:     LevelRaiseAndShards,
	CommandRaiseSequence:     LevelRaiseAndShards,
	CommandCreateNamespaceV2: LevelRaiseAndShards,
	CommandLeaseV2:           LevelRaiseAndShards,
	CommandSetFeatureLevel:   LevelClusterLevel,
	CommandStandby:           LevelStandby,
	CommandEndPromotionRest:  LevelPromotionRest,
}

// snapshotFormatLevels is the level that can read each snapshot format.
var snapshotFormatLevels = map[uint32]FeatureLevel{
	1: LevelBase, 2: LevelBase, 3: LevelBase, 4: LevelBase,
	5: LevelRaiseAndShards,
	6: LevelClusterLevel,
	7: LevelStandby,
	8: LevelPromotionRest,
}

// LevelDescription describes a feature level for people: the highest log
// entry type and snapshot format a binary of the level knows. Its fields
// are api.FeatureLevel's and domain.FeatureLevel's, so either converts.
type LevelDescription struct {
	Level          int
	MaxEntryType   int
	SnapshotFormat int
}

// LevelInfo describes a feature level for people.
func LevelInfo(l FeatureLevel) LevelDescription {
	out := LevelDescription{Level: int(l)}
	for t, tl := range entryTypeLevels {
		if tl <= l {
			out.MaxEntryType = max(out.MaxEntryType, int(t))
		}
	}
	for f, fl := range snapshotFormatLevels {
		if fl <= l {
			out.SnapshotFormat = max(out.SnapshotFormat, int(f))
		}
	}
	return out
}

// EntryTypeLevel is the level an entry of type t needs (the flag
// IgnoreUnknownTypeFlag stripped), and false for a type this binary does
// not know.
func EntryTypeLevel(t CommandType) (FeatureLevel, bool) {
	l, ok := entryTypeLevels[t&^IgnoreUnknownTypeFlag]
	return l, ok
}

// RequiredLevel is the level every member must know before a leader may
// propose entry: its type's level, and for a restore the level of the
// format its backup is written in (a restore is validated by each node's
// own snapshot rules, so a node that does not know the format would refuse
// what the others apply, and the replicas would diverge).
func RequiredLevel(entry []byte) (FeatureLevel, error) {
	if len(entry) == 0 {
		return 0, fmt.Errorf("%w: empty entry", ErrInvalidCommand)
	}
	t := CommandType(entry[0])
	l, ok := EntryTypeLevel(t)
	if !ok {
		return 0, fmt.Errorf("%w: this binary does not know entry type %d", ErrInvalidCommand, uint8(t))
	}
	if t&^IgnoreUnknownTypeFlag == CommandRestoreBackup {
		var r RestoreBackup
		if err := json.Unmarshal(entry[1:], &r); err != nil {
			return 0, fmt.Errorf("%w: restore entry: %v", ErrInvalidCommand, err)
		}
		fl, err := backupFormatLevel(r.Backup)
		if err != nil {
			return 0, err
		}
		l = max(l, fl)
	}
	return l, nil
}

// backupFormatLevel is the level that reads backup's format.
func backupFormatLevel(backup []byte) (FeatureLevel, error) {
	if len(backup) < 12 {
		return 0, fmt.Errorf("%w: a backup of %d bytes has no header", ErrInvalidCommand, len(backup))
	}
	v := binary.BigEndian.Uint32(backup[8:12])
	l, ok := snapshotFormatLevels[v]
	if !ok {
		return 0, fmt.Errorf("%w: backup format %d is newer than this binary knows (%d)", ErrInvalidCommand, v, SnapshotVersion)
	}
	return l, nil
}

// SetFeatureLevel is the body of CommandSetFeatureLevel.
type SetFeatureLevel struct {
	Level FeatureLevel `json:"level"`
}

// EncodeSetFeatureLevel encodes a CommandSetFeatureLevel entry.
func EncodeSetFeatureLevel(c SetFeatureLevel) []byte { return mustEncode(CommandSetFeatureLevel, c) }

// UnknownLevelError is why a node cannot follow its cluster: the cluster's
// level is above what its binary knows. Apply panics with it (as at an
// unknown entry type), since applying what follows would diverge.
type UnknownLevelError struct {
	Cluster, Known FeatureLevel
	Index          uint64 // the entry (or snapshot) that recorded it
}

func (e *UnknownLevelError) Error() string {
	return fmt.Sprintf("fsm: the cluster's feature level is %d (at index %d) but this binary knows levels up to %d: run a binary of level %d or later on this node", e.Cluster, e.Index, e.Known, e.Cluster)
}

// applySetFeatureLevel raises the cluster's level; it never lowers it (a
// leader that proposed from an older view proposes a level already passed).
// (A level above CurrentLevel never gets here: decodeCommand refuses it, and
// Apply stops with an UnknownLevelError's message.)
func (f *FSM) applySetFeatureLevel(c SetFeatureLevel) any {
	if c.Level < LevelBase {
		return fmt.Errorf("%w: feature level %d is below the base level %d", ErrInvalidCommand, c.Level, LevelBase)
	}
	if c.Level > f.ClusterLevel() {
		f.clusterLevel.Store(uint32(c.Level))
	}
	return nil
}

// ClusterLevel is the cluster's feature level as this FSM has applied it:
// LevelBase until an entry (or a snapshot) recorded a higher one.
func (f *FSM) ClusterLevel() FeatureLevel {
	return max(LevelBase, FeatureLevel(f.clusterLevel.Load()))
}
