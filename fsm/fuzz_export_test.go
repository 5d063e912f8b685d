package fsm

import "fmt"

// Test-only access for the fuzz targets in fuzz_test.go (package fsm_test):
// the unexported decode step of Apply and the namespace rules; and, for the
// property tests, a check of the ordered index of sequences.

// DecodeCommand is decodeCommand: Apply's decode step, which reports a
// corrupt entry as an error where Apply panics.
var DecodeCommand = decodeCommand

// ValidateLayout is the rule every namespace keeps (in a snapshot, a backup
// or at creation).
func (n Namespace) ValidateLayout() error { return n.validateLayout() }

// ValidateAt is the rule a namespace must pass when an entry stamped nowMs
// creates it.
func (n Namespace) ValidateAt(nowMs int64) error { return n.validate(nowMs) }

// CheckSequenceIndex reports whether the ordered index of sequences holds
// exactly the map's sequences, in strictly increasing byte order of names.
func (f *FSM) CheckSequenceIndex() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.byName.Len() != len(f.sequences) {
		return fmt.Errorf("index holds %d sequences, the map %d", f.byName.Len(), len(f.sequences))
	}
	var err error
	prev := ""
	f.byName.Ascend(func(s *Sequence) bool {
		switch {
		case prev != "" && s.Name <= prev:
			err = fmt.Errorf("index has %q after %q", s.Name, prev)
		case f.sequences[s.Name] != s:
			err = fmt.Errorf("index's %q is not the map's", s.Name)
		}
		prev = s.Name
		return err == nil
	})
	return err
}
