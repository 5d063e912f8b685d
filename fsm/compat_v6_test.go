package fsm_test

import (
	"os"
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
	if *update {
		if fsm.SnapshotVersion != 6 {
			t.Fatalf("refusing to overwrite %s with a v%d snapshot", fixtureV6, fsm.SnapshotVersion)
		}
		if err := os.WriteFile(fixtureV6, persist(t, fixtureV6State(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(fixtureV6)
	if err != nil {
		t.Fatalf("read fixture (generate it with go test ./fsm/ -run TestSnapshotFixtureV6 -update): %v", err)
	}
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
