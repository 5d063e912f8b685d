package fsm_test

import (
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

const fixtureV6 = "testdata/snapshot-v6.bin"

// fixtureV6State is the v5 fixture's state once the cluster recorded level
// 3: format 6 is the oldest that carries the level.
func fixtureV6State(t *testing.T) *fsm.FSM {
	f := fixtureV5State(t)
	idx, _ := f.LastApplied()
	if resp := f.Apply(logEntry(idx+1, 1, fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.LevelClusterLevel}))); resp != nil {
		t.Fatalf("set level: %v", resp)
	}
	return f
}

func TestSnapshotFixtureV6_StillRestores(t *testing.T) {
	b := fixtureBytes(t, fixtureV6, 6, fixtureV6State)
	f := restore(t, b)
	if f.ClusterLevel() != fsm.LevelClusterLevel {
		t.Fatalf("restored level %d, want %d", f.ClusterLevel(), fsm.LevelClusterLevel)
	}
	if s, _ := f.Sequence("orders"); s.Issued != 5000 {
		t.Fatalf("orders %+v", s)
	}
	if !reflect.DeepEqual(persist(t, f), b) {
		t.Fatal("Persist no longer writes the v6 fixture's bytes for its state: a format changed without a new version")
	}
}
