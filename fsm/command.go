package fsm

import (
	"encoding/json"
	"fmt"
)

// CommandType is the first byte of every log entry ticketd writes. Values are
// appended, never renumbered: a log written by one version must decode the
// same in every later one.
type CommandType uint8

const (
	// CommandCreateSequence creates a named sequence (idempotent for the
	// same settings).
	CommandCreateSequence CommandType = 1
	// CommandReserveBlock hands the next block of a sequence to the leader
	// that proposed it; the FSM computes the block when it applies the entry.
	CommandReserveBlock CommandType = 2
	// CommandSetMember records a node's HTTP address so that any node can
	// find the leader's API.
	CommandSetMember CommandType = 3
	// CommandRemoveMember forgets a node's metadata after it was removed.
	CommandRemoveMember CommandType = 4
	// CommandCreateNamespace creates a Snowflake namespace.
	CommandCreateNamespace CommandType = 5
	// CommandAcquireLease leases a free worker id of a namespace (legacy:
	// decided by wall-clock stamps; replayed, no longer proposed).
	CommandAcquireLease CommandType = 6
	// CommandRenewLease extends a lease held with its token (legacy).
	CommandRenewLease CommandType = 7
	// CommandReleaseLease ends a lease (its holder's release, or an
	// operator's revoke) (legacy).
	CommandReleaseLease CommandType = 8
	// CommandRestoreBackup seeds an empty cluster from a backup, lifting
	// every high-water mark; refused unless the state is empty when the
	// entry applies.
	CommandRestoreBackup CommandType = 9
	// CommandLease (10) is declared in lease.go.

	// CommandReserveBlocks reserves blocks of many sequences in one entry
	// (group commit across sequences, batch.go); each is computed at apply
	// exactly as a CommandReserveBlock entry's would be at that point.
	CommandReserveBlocks CommandType = 11
	// CommandRaiseSequence (12) is declared in raise.go.

	// CommandCreateNamespaceV2 creates a namespace that uses issue #16's
	// fields (a worker role, a horizon). Its body is CreateNamespace, as
	// for CommandCreateNamespace; the type differs so that a binary that
	// does not know the fields stops at the entry (an unknown type)
	// instead of applying it without them and diverging from its peers.
	// EncodeCreateNamespace picks it only when the fields are set.
	CommandCreateNamespaceV2 CommandType = 13
	// CommandLeaseV2 is a lease operation that uses issue #16's chosen
	// worker id; its body is LeaseOp, as for CommandLease, for the same
	// reason. EncodeLeaseOp picks it only for a chosen acquire.
	CommandLeaseV2 CommandType = 14
	// CommandSetFeatureLevel records the cluster's feature level (level.go):
	// the leader proposes it once every member reports that it knows the
	// level. A node whose binary does not know the level stops at it.
	CommandSetFeatureLevel CommandType = 15
	// CommandStandby (16) is declared in standby.go.
	// CommandEndPromotionRest (17) is declared in promotionrest.go.

	// IgnoreUnknownTypeFlag marks a command that an older version may skip
	// when it does not know the type (as Nomad does): set it on new command
	// types that only add optional state. Without the flag an unknown type
	// stops the node, since applying a log it cannot read would diverge.
	IgnoreUnknownTypeFlag CommandType = 0x80
)

func (t CommandType) String() string {
	switch t {
	case CommandCreateSequence:
		return "create-sequence"
	case CommandReserveBlock:
		return "reserve-block"
	case CommandSetMember:
		return "set-member"
	case CommandRemoveMember:
		return "remove-member"
	case CommandCreateNamespace:
		return "create-namespace"
	case CommandAcquireLease:
		return "acquire-lease"
	case CommandRenewLease:
		return "renew-lease"
	case CommandReleaseLease:
		return "release-lease"
	case CommandRestoreBackup:
		return "restore-backup"
	case CommandLease:
		return "lease"
	case CommandReserveBlocks:
		return "reserve-blocks"
	case CommandRaiseSequence:
		return "raise-sequence"
	case CommandCreateNamespaceV2:
		return "create-namespace-v2"
	case CommandLeaseV2:
		return "lease-v2"
	case CommandSetFeatureLevel:
		return "set-feature-level"
	case CommandStandby:
		return "standby"
	case CommandEndPromotionRest:
		return "end-promotion-rest"
	}
	return fmt.Sprintf("command(%d)", uint8(t))
}

// CreateSequence is the body of CommandCreateSequence.
type CreateSequence struct {
	Name  string `json:"name"`
	Start int64  `json:"start"`
	Max   int64  `json:"max"`
}

// ReserveBlock is the body of CommandReserveBlock. The FSM grants
// min(Count, IDs left) IDs starting just above the high-water mark, and
// refuses with ErrSequenceExhausted when fewer than Min are left: the leader
// sets Min to what the requests waiting on the block need, so that a sequence
// close to its maximum still serves small requests.
type ReserveBlock struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Min   int64  `json:"min"`
	// Stamp is recorded in the allocation audit only; the block itself
	// never depends on it.
	Stamp
}

// SetMember is the body of CommandSetMember.
type SetMember struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
}

// RemoveMember is the body of CommandRemoveMember.
type RemoveMember struct {
	ID string `json:"id"`
}

// Encode returns the log entry for a command: the type byte, then the body
// as JSON. JSON keeps the log readable with standard tools; blocks are
// proposed a few times a second at most, so its cost does not matter.
func Encode(t CommandType, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", t, err)
	}
	out := make([]byte, 0, len(b)+1)
	out = append(out, byte(t))
	return append(out, b...), nil
}

// EncodeCreateSequence encodes a CommandCreateSequence entry.
func EncodeCreateSequence(c CreateSequence) []byte { return mustEncode(CommandCreateSequence, c) }

// EncodeReserveBlock encodes a CommandReserveBlock entry.
func EncodeReserveBlock(c ReserveBlock) []byte { return mustEncode(CommandReserveBlock, c) }

// EncodeSetMember encodes a CommandSetMember entry.
func EncodeSetMember(c SetMember) []byte { return mustEncode(CommandSetMember, c) }

// EncodeRemoveMember encodes a CommandRemoveMember entry.
func EncodeRemoveMember(c RemoveMember) []byte { return mustEncode(CommandRemoveMember, c) }

// EncodeCreateNamespace encodes a CommandCreateNamespace entry.
// A namespace with issue #16's fields goes as CommandCreateNamespaceV2.
func EncodeCreateNamespace(c CreateNamespace) []byte {
	if c.Namespace.WorkerRole != "" || c.Namespace.HorizonYears != 0 {
		return mustEncode(CommandCreateNamespaceV2, c)
	}
	return mustEncode(CommandCreateNamespace, c)
}

// EncodeAcquireLease encodes a CommandAcquireLease entry.
func EncodeAcquireLease(c AcquireLease) []byte { return mustEncode(CommandAcquireLease, c) }

// EncodeRenewLease encodes a CommandRenewLease entry.
func EncodeRenewLease(c RenewLease) []byte { return mustEncode(CommandRenewLease, c) }

// EncodeReleaseLease encodes a CommandReleaseLease entry.
func EncodeReleaseLease(c ReleaseLease) []byte { return mustEncode(CommandReleaseLease, c) }

// EncodeRestoreBackup encodes a CommandRestoreBackup entry.
func EncodeRestoreBackup(c RestoreBackup) []byte { return mustEncode(CommandRestoreBackup, c) }

// mustEncode panics only if a plain struct of strings and integers cannot be
// marshalled, which would be a programming error.
func mustEncode(t CommandType, body any) []byte {
	b, err := Encode(t, body)
	if err != nil {
		panic(err)
	}
	return b
}
