package fsm

import "fmt"

// The rules below decide whether a log entry applies, so they are part of the
// command format and frozen with it: every binary that ever applies a log must
// give each entry the same answer, or two replicas of one log diverge. They
// live here rather than in the wire package (api) on purpose. api keeps its
// own checks so that a request is refused with a 400 before it is proposed,
// and those may be tightened from one release to the next; these may not.
// TestWireRulesImplyFSMRules holds api's checks to never accepting what these
// refuse. Loosening or tightening a rule here is a new command type, not an
// edit.

// maxNameLen is the longest sequence or namespace name an entry may carry.
const maxNameLen = 64

// validateName is the naming rule of sequences and namespaces as applied
// from the log: 1 to 64 bytes, each an ASCII letter, digit, '.', '_' or '-'.
//
// It accepts "." and "..", which api refuses at creation since they are dot
// segments that URLs and proxies resolve away. That tightening stays in api
// on purpose: here it would be a new command type that older nodes of a
// mixed-version cluster cannot apply, and the logs, snapshots and backups of
// earlier releases that hold such names must keep applying, as those
// sequences keep working (TestFSMRules_DotNames_...).
func validateName(name string) error {
	if name == "" {
		return fmt.Errorf("name is empty; use 1 to %d of [A-Za-z0-9._-]", maxNameLen)
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("name is %d bytes long; at most %d are allowed", len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '.', b == '_', b == '-':
		default:
			return fmt.Errorf("name has %q at byte %d; only [A-Za-z0-9._-] are allowed", b, i)
		}
	}
	return nil
}

// validateBounds is the rule on a sequence's first and last ID: IDs are
// positive, and a sequence holds at least one.
func validateBounds(start, max int64) error {
	if start < 1 {
		return fmt.Errorf("start must be at least 1, got %d", start)
	}
	if max < start {
		return fmt.Errorf("max (%d) must be at least start (%d)", max, start)
	}
	return nil
}
