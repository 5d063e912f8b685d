package fsm

// Test-only access for the fuzz targets in fuzz_test.go (package fsm_test):
// the unexported decode step of Apply and the namespace rules.

// DecodeCommand is decodeCommand: Apply's decode step, which reports a
// corrupt entry as an error where Apply panics.
var DecodeCommand = decodeCommand

// ValidateLayout is the rule every namespace keeps (in a snapshot, a backup
// or at creation).
func (n Namespace) ValidateLayout() error { return n.validateLayout() }

// ValidateAt is the rule a namespace must pass when an entry stamped nowMs
// creates it.
func (n Namespace) ValidateAt(nowMs int64) error { return n.validate(nowMs) }
