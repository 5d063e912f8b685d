package migrate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// DefaultMargin is the margin a migration adds above the source's highest
// ID when none is given. IDs are int64, so a million skipped IDs cost
// nothing, and they cover a legacy generator handing out a thousand IDs a
// second for over a quarter of an hour after the source was read.
const DefaultMargin int64 = 1_000_000

// Action is what a migration does to the ticketd sequence.
type Action string

const (
	// ActionCreate creates the sequence with start = target + 1.
	ActionCreate Action = "create"
	// ActionRaise raises an existing sequence's high-water mark to target.
	ActionRaise Action = "raise"
	// ActionNone: the sequence's high-water mark is already at or above
	// target.
	ActionNone Action = "nothing to do"
)

// Options are a migration's settings beyond its source and sequence.
type Options struct {
	// Margin is added to the source's highest ID: it must cover every ID
	// the legacy generator hands out from the moment it is read until it
	// stops for good (or until the migration is run again). Negative is
	// invalid.
	Margin int64
	// Max is the max of a sequence the migration creates (0: the server's
	// default, api.DefaultMax). It does not change an existing sequence.
	Max int64
}

// Plan is what a migration will do, worked out from the source and the
// sequence as they are now.
type Plan struct {
	Sequence string `json:"sequence"`
	Source   string `json:"source"`
	// SourceHighest is the highest ID the source had handed out when read.
	SourceHighest int64 `json:"source_highest"`
	Margin        int64 `json:"margin"`
	// Target is the high-water mark the sequence must have: once the
	// migration has returned, every ID ticketd hands out is above it.
	Target int64  `json:"target"`
	Action Action `json:"action"`
	// Current is the sequence before the migration; nil when it does not
	// exist.
	Current *api.Sequence `json:"current,omitempty"`
	// CurrentMark is the sequence's high-water mark before the migration
	// (the highest ID it ever handed to a leader; Start-1 when none).
	CurrentMark *int64 `json:"current_mark,omitempty"`
	// Start and Max are the settings of the sequence to create
	// (ActionCreate only).
	Start int64 `json:"start,omitempty"`
	Max   int64 `json:"max,omitempty"`
}

// Result is a migration's outcome.
type Result struct {
	Plan
	// Done is what was done: ActionCreate, ActionRaise or ActionNone. It
	// may differ from Plan.Action when the sequence changed between the
	// plan and its application (created by someone else meanwhile).
	Done Action `json:"done,omitempty"`
	// Skipped is how many IDs a raise passed over.
	Skipped int64 `json:"skipped,omitempty"`
	// After is the sequence after the migration (nil after a dry run).
	After *api.Sequence `json:"after,omitempty"`
}

// Target is highest + margin, checked.
func Target(highest, margin int64) (int64, error) {
	if margin < 0 {
		return 0, fmt.Errorf("%w: margin must not be negative, got %d", ErrInvalid, margin)
	}
	if highest < 0 {
		return 0, fmt.Errorf("%w: highest ID must not be negative, got %d", ErrInvalid, highest)
	}
	if highest > math.MaxInt64-margin {
		return 0, fmt.Errorf("%w: highest ID %d + margin %d overflows int64", ErrPastMax, highest, margin)
	}
	return highest + margin, nil
}

// mark is a sequence's high-water mark: the highest ID it ever handed to a
// leader.
func mark(s api.Sequence) int64 {
	if s.Next == nil {
		return s.Max
	}
	return *s.Next - 1
}

// MakePlan reads the source, then the sequence, and works out what a
// migration does. It changes nothing: a dry run is MakePlan alone.
func MakePlan(ctx context.Context, c *client.Client, sequence string, src Source, o Options) (Plan, error) {
	if o.Margin < 0 {
		return Plan{}, fmt.Errorf("%w: margin must not be negative, got %d", ErrInvalid, o.Margin)
	}
	if o.Max < 0 {
		return Plan{}, fmt.Errorf("%w: max must not be negative, got %d", ErrInvalid, o.Max)
	}
	if err := api.ValidateSequenceName(sequence); err != nil {
		return Plan{}, fmt.Errorf("%w: sequence: %v", ErrInvalid, err)
	}
	highest, err := src.Highest(ctx)
	if err != nil {
		return Plan{}, err
	}
	target, err := Target(highest, o.Margin)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Sequence: sequence, Source: src.String(), SourceHighest: highest, Margin: o.Margin, Target: target}
	cur, err := c.SequenceInfo(ctx, sequence)
	switch {
	case errors.Is(err, client.ErrNotFound):
		p.Action = ActionCreate
		p.Max = o.Max
		if p.Max == 0 {
			p.Max = api.DefaultMax
		}
		if target >= p.Max {
			return p, fmt.Errorf("%w: target %d (source's highest %d + margin %d) leaves no ID at or below max %d for a new sequence %q",
				ErrPastMax, target, highest, o.Margin, p.Max, sequence)
		}
		p.Start = target + 1
		return p, nil
	case err != nil:
		return p, fmt.Errorf("ticketd: reading sequence %q: %w", sequence, err)
	}
	m := mark(cur)
	p.Current, p.CurrentMark = &cur, &m
	if m >= target {
		p.Action = ActionNone
		return p, nil
	}
	if target >= cur.Max {
		return p, fmt.Errorf("%w: target %d (source's highest %d + margin %d) leaves sequence %q no ID at or below its max %d",
			ErrPastMax, target, highest, o.Margin, sequence, cur.Max)
	}
	p.Action = ActionRaise
	return p, nil
}

// Apply carries a plan out through the SDK. A new sequence is created with
// start = target + 1; an existing one is raised to target, which never
// lowers its mark. Apply calls RaiseSequence even when the plan found the
// mark already high enough: the server, not the plan's earlier reading,
// decides, and its promise (no ID at or below target is handed out once
// the call returns) also covers IDs a leader holds in memory.
func Apply(ctx context.Context, c *client.Client, p Plan) (Result, error) {
	r := Result{Plan: p}
	if p.Action == ActionCreate {
		info, created, err := c.CreateSequence(ctx, p.Sequence, client.SequenceSettings{Start: p.Start, Max: p.Max})
		switch {
		case err == nil && created:
			r.Done, r.After = ActionCreate, &info
			return r, nil
		case err == nil, errors.Is(err, client.ErrConflict):
			// Created meanwhile, by someone else or by an earlier run with
			// the same settings: raise it instead.
		default:
			return r, fmt.Errorf("ticketd: creating sequence %q with start %d: %w", p.Sequence, p.Start, err)
		}
	}
	if p.Target < 1 {
		// Nothing was ever handed out and no margin asked for: every mark
		// is at or above 0. (A raise takes at least 1.)
		info, err := c.SequenceInfo(ctx, p.Sequence)
		r.Done, r.After = ActionNone, &info
		return r, err
	}
	res, err := c.RaiseSequence(ctx, p.Sequence, p.Target)
	if err != nil {
		if errors.Is(err, client.ErrExhausted) {
			return r, fmt.Errorf("%w: raising sequence %q to %d: %w", ErrPastMax, p.Sequence, p.Target, err)
		}
		return r, fmt.Errorf("ticketd: raising sequence %q to %d: %w", p.Sequence, p.Target, err)
	}
	r.After, r.Skipped = &res.Sequence, res.Skipped
	r.Done = ActionNone
	if res.Raised {
		r.Done = ActionRaise
	}
	return r, nil
}

// Run plans a migration and, unless dryRun, applies it. With dryRun the
// Result's Done is empty and After nil.
func Run(ctx context.Context, c *client.Client, sequence string, src Source, o Options, dryRun bool) (Result, error) {
	p, err := MakePlan(ctx, c, sequence, src, o)
	if err != nil {
		return Result{Plan: p}, err
	}
	if dryRun {
		return Result{Plan: p}, nil
	}
	return Apply(ctx, c, p)
}
