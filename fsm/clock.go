package fsm

// Stamp is what the leader writes into entries that need time: its clock
// and its ID (for the audit).
type Stamp struct {
	NowMs  int64  `json:"now_ms,omitempty"`
	Leader string `json:"leader,omitempty"`
}

func (f *FSM) tick(s Stamp) int64 {
	if s.NowMs > f.clockMs {
		f.clockMs = s.NowMs
	}
	return f.clockMs
}

// ClockMs is the latest leader stamp the FSM has seen: informational (and
// the legacy commands' clock).
func (f *FSM) ClockMs() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.clockMs
}
