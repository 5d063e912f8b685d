package fsm

import (
	"fmt"
	"math"
	"sort"
)

// Year is the length of a year used for capacity figures (365.25 days).
const Year int64 = 365.25 * 24 * 3600 * 1000

// Namespace is a Snowflake ID layout and its lease policy.
type Namespace struct {
	Name string `json:"name"`
	// EpochMs is the Unix time in milliseconds that timestamp 0 stands for.
	EpochMs int64 `json:"epoch_ms"`
	// Bits: TimestampBits+WorkerBits+SequenceBits = 63, so IDs are
	// positive int64s.
	TimestampBits uint8 `json:"timestamp_bits"`
	WorkerBits    uint8 `json:"worker_bits"`
	SequenceBits  uint8 `json:"sequence_bits"`
	// TickMs is the length of one timestamp unit.
	TickMs int64 `json:"tick_ms"`
	// MaxWorkers is how many worker ids may be leased at once.
	MaxWorkers int64 `json:"max_workers"`
	// LeaseTTLMs is how long a lease lasts without renewal.
	LeaseTTLMs int64 `json:"lease_ttl_ms"`
	// RecycleDelayMs is how long a worker id rests after its lease ended
	// before it is granted again; at least the TTL, so that a holder that
	// could not renew has stopped before its id is reused.
	RecycleDelayMs int64 `json:"recycle_delay_ms"`
	// WorkerRole is what the worker field of an ID stands for: "" (a
	// worker id: an acquire gets the lowest free one, or the one it
	// chooses) or WorkerRoleShard (a logical shard, as in Instagram's IDs:
	// an acquire must choose its shard, LeaseOp.Chosen). Issue #16;
	// absent from every namespace made before, which reads as "".
	WorkerRole string `json:"worker_role,omitempty"`
	// HorizonYears is how long the namespace is meant to last: creating it
	// warns when its timestamp bits run out sooner. 0 is the default,
	// DefaultHorizonYears. Advisory only: nothing the FSM decides reads it
	// (issue #16; absent before).
	HorizonYears int64 `json:"horizon_years,omitempty"`
}

// WorkerRoleShard marks a namespace whose worker field is a logical shard.
const WorkerRoleShard = "shard"

// DefaultHorizonYears is the horizon of a namespace that names none: 30
// years, about as long as a database schema outlives the system it was
// designed for, and well inside the 69.7 years of 41 bits of milliseconds,
// so the default layout creates without a warning and one that halves
// the timestamp's range does not.
const DefaultHorizonYears int64 = 30

// MaxHorizonYears bounds HorizonYears (its milliseconds fit an int64 many
// times over).
const MaxHorizonYears int64 = 10_000

// Horizon is HorizonYears, or the default for 0.
func (n Namespace) Horizon() int64 {
	if n.HorizonYears == 0 {
		return DefaultHorizonYears
	}
	return n.HorizonYears
}

// EndMs is the last millisecond the timestamp bits can express (saturating
// at the int64 maximum).
func (n Namespace) EndMs() int64 {
	units := (int64(1) << n.TimestampBits) - 1
	if n.TickMs > 0 && units > (math.MaxInt64-n.EpochMs)/n.TickMs {
		return math.MaxInt64
	}
	return n.EpochMs + units*n.TickMs
}

// YearsLeft is how long after nowMs the timestamp bits last.
func (n Namespace) YearsLeft(nowMs int64) float64 {
	return float64(n.EndMs()-nowMs) / float64(Year)
}

func (n Namespace) validate(nowMs int64) error {
	if err := n.validateLayout(); err != nil {
		return err
	}
	if n.EpochMs > nowMs {
		return fmt.Errorf("epoch_ms %d must be in the past (now %d)", n.EpochMs, nowMs)
	}
	if n.EndMs()-nowMs < 10*Year {
		return fmt.Errorf("the timestamp bits run out %.1f years from now; a layout must leave at least 10", n.YearsLeft(nowMs))
	}
	return nil
}

// validateLayout checks the rules a namespace keeps at any time (validate
// adds those about the time of its creation).
func (n Namespace) validateLayout() error {
	if err := validateName(n.Name); err != nil {
		return fmt.Errorf("namespace %v", err)
	}
	if n.TimestampBits < 1 || n.WorkerBits < 1 || n.SequenceBits < 1 || int(n.TimestampBits)+int(n.WorkerBits)+int(n.SequenceBits) != 63 {
		return fmt.Errorf("timestamp_bits (%d) + worker_bits (%d) + sequence_bits (%d) must be 63, each at least 1", n.TimestampBits, n.WorkerBits, n.SequenceBits)
	}
	if n.TickMs < 1 || n.TickMs > 60_000 {
		return fmt.Errorf("tick_ms must be between 1 and 60000, got %d", n.TickMs)
	}
	if n.MaxWorkers < 1 || n.MaxWorkers > int64(1)<<n.WorkerBits {
		return fmt.Errorf("max_workers %d does not fit worker_bits %d (at most %d)", n.MaxWorkers, n.WorkerBits, int64(1)<<n.WorkerBits)
	}
	if n.EpochMs < 0 {
		return fmt.Errorf("epoch_ms %d must not be negative", n.EpochMs)
	}
	if n.LeaseTTLMs < 1000 || n.LeaseTTLMs > 3_600_000 {
		return fmt.Errorf("lease_ttl_ms must be between 1000 and 3600000, got %d", n.LeaseTTLMs)
	}
	if n.RecycleDelayMs < n.LeaseTTLMs || n.RecycleDelayMs > 24*3_600_000 {
		return fmt.Errorf("recycle_delay_ms must be at least lease_ttl_ms (%d) and at most a day, got %d", n.LeaseTTLMs, n.RecycleDelayMs)
	}
	// Issue #16's fields; both are absent (valid) in older namespaces.
	if n.WorkerRole != "" && n.WorkerRole != WorkerRoleShard {
		return fmt.Errorf("worker_role must be empty (worker ids) or %q, got %q", WorkerRoleShard, n.WorkerRole)
	}
	if n.HorizonYears < 0 || n.HorizonYears > MaxHorizonYears {
		return fmt.Errorf("horizon_years must be between 1 and %d (0: the default), got %d", MaxHorizonYears, n.HorizonYears)
	}
	return nil
}

// CreateNamespace is the body of CommandCreateNamespace.
type CreateNamespace struct {
	Namespace Namespace `json:"namespace"`
	Stamp
}

// NamespaceResult is the result of CommandCreateNamespace.
type NamespaceResult struct {
	Namespace Namespace
	Created   bool
}

func (f *FSM) applyCreateNamespace(c CreateNamespace, index, term uint64) any {
	now := f.tick(c.Stamp)
	n := c.Namespace
	if err := n.validate(now); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidCommand, err)
	}
	if old, ok := f.namespaces[n.Name]; ok {
		if *old != n {
			return fmt.Errorf("%w: %q has another layout or lease policy", ErrNamespaceConflict, n.Name)
		}
		return NamespaceResult{Namespace: *old}
	}
	f.namespaces[n.Name] = &n
	f.leases[n.Name] = map[int64]*Lease{}
	return NamespaceResult{Namespace: n, Created: true}
}

// Namespace returns a namespace's layout.
func (f *FSM) Namespace(name string) (Namespace, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.namespaces[name]
	if !ok {
		return Namespace{}, false
	}
	return *n, true
}

// Namespaces returns every namespace, sorted by name.
func (f *FSM) Namespaces() []Namespace {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.sortedNamespaces()
}

func (f *FSM) sortedNamespaces() []Namespace {
	out := make([]Namespace, 0, len(f.namespaces))
	for _, n := range f.namespaces {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
