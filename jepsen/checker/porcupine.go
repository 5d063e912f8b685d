package checker

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// PorcupineResult summarizes the window-by-window porcupine check.
type PorcupineResult struct {
	Valid bool `json:"valid"`
	// Windows checked, and how they ended.
	Windows int `json:"windows"`
	Ok      int `json:"ok"`
	Illegal int `json:"illegal"`
	// Unknown counts windows porcupine could not decide within the
	// timeout; they do not make the run invalid (the exact sorted check
	// covers the whole history).
	Unknown    int      `json:"unknown"`
	Ops        int      `json:"ops"`
	WindowSize int      `json:"window_size"`
	Visualized []string `json:"visualizations,omitempty"`
	// FirstIllegal describes the first illegal window.
	FirstIllegal string  `json:"first_illegal,omitempty"`
	FirstSeenMs  float64 `json:"first_seen_ms,omitempty"`
	Elapsed      string  `json:"elapsed"`
}

// PorcupineOptions tune CheckPorcupine.
type PorcupineOptions struct {
	// Window is how many operations one porcupine check gets (default 200).
	Window int
	// Timeout bounds one window (default 10s).
	Timeout time.Duration
	// VisDir receives an HTML visualization of the first MaxVis illegal
	// windows ("" for none).
	VisDir string
	MaxVis int
	// Budget bounds the whole check (default 5 minutes); windows left
	// when it runs out are not checked (and not counted).
	Budget time.Duration
}

// hwm is the model's state: the highest last ID of the ranges linearized so
// far, and the highest next of the reads. Gaps are allowed: a reservation
// only has to start above every range before it.
type hwm struct {
	Ack       int64
	Floor     int64
	Exhausted bool
}

type pInput struct {
	F     string
	Count int64
}

type pOutput struct {
	First, Last int64
	Next        int64
	Exhausted   bool
}

// readStep is a read of next (a read's answer, or a raise's) in the model:
// above every range linearized before it and not below an earlier read.
func readStep(s hwm, out pOutput) (bool, interface{}) {
	switch {
	case out.Exhausted:
		s.Exhausted = true
		return true, s
	case s.Exhausted, out.Next <= s.Ack, out.Next < s.Floor:
		return false, s
	}
	s.Floor = out.Next
	return true, s
}

// hwmModel is the sequential specification of one sequence as clients see
// it: a reservation's output is a range that starts above every range
// linearized before it; a read's next lies above every such range and not
// below an earlier read. Operations with an unknown outcome are left out of
// the history: in this model one can always be linearized at the end with
// no visible effect (the IDs it may have consumed are a gap, which is
// allowed), so leaving it out cannot hide a violation nor invent one.
func hwmModel(init hwm) porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} { return init },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			s := state.(hwm)
			in := input.(pInput)
			out := output.(pOutput)
			switch in.F {
			case FRaise:
				// Every range after it starts above at_least; its answer
				// is a read of next taken after it applied.
				s.Ack = max(s.Ack, in.Count)
				return readStep(s, out)
			case FRead:
				return readStep(s, out)
			}
			if out.First <= s.Ack {
				return false, s
			}
			s.Ack = out.Last
			return true, s
		},
		Equal: func(a, b interface{}) bool { return a.(hwm) == b.(hwm) },
		DescribeOperation: func(input, output interface{}) string {
			in := input.(pInput)
			out := output.(pOutput)
			if in.F == FRaise {
				if out.Exhausted {
					return fmt.Sprintf("raise(%d) → next=null", in.Count)
				}
				return fmt.Sprintf("raise(%d) → next=%d", in.Count, out.Next)
			}
			if in.F == FRead {
				if out.Exhausted {
					return "read → next=null"
				}
				return fmt.Sprintf("read → next=%d", out.Next)
			}
			return fmt.Sprintf("%s(%d) → %d..%d", in.F, in.Count, out.First, out.Last)
		},
		DescribeState: func(state interface{}) string {
			s := state.(hwm)
			if s.Exhausted {
				return fmt.Sprintf("acked≤%d, next=null", s.Ack)
			}
			return fmt.Sprintf("acked≤%d, next≥%d", s.Ack, s.Floor)
		},
	}
}

// CheckPorcupine runs porcupine on windows of each sequence's ok raw
// reservations and reads (SDK Next results are served from a client cache
// and are not linearizable across clients by design). A window holds the next Window
// operations by invocation time; its initial state is what every operation
// that completed before the window's first invocation implies. That is
// sound: those operations precede every operation of the window in real
// time, so any linearization of the whole history reaches the window with at
// least that state, and a lower state only admits more. Operations still in
// flight at the window's start belong to the window before it.
func CheckPorcupine(ops []Op, opt PorcupineOptions) PorcupineResult {
	if opt.Window <= 0 {
		opt.Window = 200
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	if opt.Budget <= 0 {
		opt.Budget = 5 * time.Minute
	}
	start := time.Now()
	res := PorcupineResult{Valid: true, WindowSize: opt.Window}
	per := map[string][]*Op{}
	for i := range ops {
		o := &ops[i]
		if (o.IsRange() && o.F == FReserve) || o.IsRead() || o.IsRaise() {
			per[o.Seq] = append(per[o.Seq], o)
		}
	}
	firstSeen := int64(-1)
	for _, seq := range sortedKeys(per) {
		all := per[seq]
		byInvoke := append([]*Op(nil), all...)
		sort.Slice(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
		byComplete := append([]*Op(nil), all...)
		sort.Slice(byComplete, func(i, j int) bool { return byComplete[i].Complete < byComplete[j].Complete })
		var init hwm
		ci := 0
		for w := 0; w*opt.Window < len(byInvoke); w++ {
			if time.Since(start) > opt.Budget {
				res.Elapsed = time.Since(start).Round(time.Millisecond).String()
				return res
			}
			win := byInvoke[w*opt.Window : min((w+1)*opt.Window, len(byInvoke))]
			t1 := win[0].Invoke
			for ; ci < len(byComplete) && byComplete[ci].Complete < t1; ci++ {
				o := byComplete[ci]
				if o.F == FRaise {
					init.Ack = max(init.Ack, o.Count)
				}
				switch {
				case (o.F == FRead || o.F == FRaise) && o.Exhausted:
					init.Exhausted = true
				case o.F == FRead || o.F == FRaise:
					init.Floor = max(init.Floor, o.Next)
				default:
					init.Ack = max(init.Ack, o.Last)
				}
			}
			hist := make([]porcupine.Operation, 0, len(win))
			clients := map[int]int{}
			for _, o := range win {
				c, ok := clients[o.Worker]
				if !ok {
					c = len(clients)
					clients[o.Worker] = c
				}
				hist = append(hist, porcupine.Operation{
					ClientId: c,
					Input:    pInput{F: o.F, Count: o.Count},
					Call:     o.Invoke,
					Output:   pOutput{First: o.First, Last: o.Last, Next: o.Next, Exhausted: o.Exhausted},
					Return:   o.Complete,
					Metadata: fmt.Sprintf("op %d via %s", o.Index, o.Node),
				})
			}
			model := hwmModel(init)
			res.Windows++
			res.Ops += len(hist)
			result, info := porcupine.CheckOperationsVerbose(model, hist, opt.Timeout)
			switch result {
			case porcupine.Ok:
				res.Ok++
			case porcupine.Unknown:
				res.Unknown++
			case porcupine.Illegal:
				res.Illegal++
				res.Valid = false
				last := int64(0)
				for _, o := range win {
					last = max(last, o.Complete)
				}
				if firstSeen < 0 || last < firstSeen {
					firstSeen = last
				}
				if res.FirstIllegal == "" {
					res.FirstIllegal = fmt.Sprintf("sequence %s, window %d (ops invoked %.3f..%.3f ms, initial state %s)",
						seq, w, ms(t1), ms(win[len(win)-1].Invoke), model.DescribeState(init))
				}
				if opt.VisDir != "" && len(res.Visualized) < opt.MaxVis {
					name := fmt.Sprintf("porcupine-%s-w%d.html", seq, w)
					if err := porcupine.VisualizePath(model, info, filepath.Join(opt.VisDir, name)); err == nil {
						res.Visualized = append(res.Visualized, name)
					} else {
						fmt.Fprintf(os.Stderr, "porcupine visualization %s: %v\n", name, err)
					}
				}
			}
		}
	}
	if firstSeen >= 0 {
		res.FirstSeenMs = ms(firstSeen)
	}
	res.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return res
}
