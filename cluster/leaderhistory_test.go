package cluster

import (
	"fmt"
	"testing"
	"time"
)

func TestLeaderHistory_RecordsChangesNotRepeats(t *testing.T) {
	var h leaderHistory
	t0 := time.Unix(1000, 0)
	steps := []struct {
		term   uint64
		leader string
	}{
		{1, ""},   // nothing known yet: not recorded
		{2, "n1"}, // first leader
		{2, "n1"}, // same: not recorded
		{3, ""},   // leader lost
		{3, ""},   // still none
		{4, ""},   // a new election without a leader: still none
		{4, "n2"}, // new leader
		{5, "n2"}, // re-elected in a new term
	}
	for i, s := range steps {
		h.observe(s.term, s.leader, t0.Add(time.Duration(i)*time.Second))
	}
	got := h.list()
	want := []string{"5/n2@7", "4/n2@6", "3/@3", "2/n1@1"}
	if len(got) != len(want) {
		t.Fatalf("got %d changes %+v, want %v", len(got), got, want)
	}
	for i, c := range got {
		if s := fmt.Sprintf("%d/%s@%d", c.Term, c.Leader, c.At.Unix()-1000); s != want[i] {
			t.Fatalf("change %d = %s, want %s (all: %+v)", i, s, want[i], got)
		}
	}
}

func TestLeaderHistory_Bounded(t *testing.T) {
	var h leaderHistory
	for i := 1; i <= 3*leaderHistoryLen; i++ {
		h.observe(uint64(i), fmt.Sprintf("n%d", i%3), time.Unix(int64(i), 0))
	}
	got := h.list()
	if len(got) != leaderHistoryLen || got[0].Term != 3*leaderHistoryLen || got[len(got)-1].Term != 2*leaderHistoryLen+1 {
		t.Fatalf("kept %d changes, newest term %d, oldest %d", len(got), got[0].Term, got[len(got)-1].Term)
	}
}
