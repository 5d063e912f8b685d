package fsm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// The gate stays for the future: a type that Apply knows must declare the
// level it needs (fsm.EntryTypeLevel), or a leader could propose it to
// followers that stop at it. This fails for a type added without one.
func TestLevels_EveryKnownEntryTypeDeclaresItsLevel(t *testing.T) {
	known := 0
	for typ := 0; typ < int(fsm.IgnoreUnknownTypeFlag); typ++ {
		_, body, err := fsm.DecodeCommand([]byte{byte(typ), '{', '}'})
		if err != nil || body == nil {
			continue // unknown (or no entry at all): nothing to declare
		}
		known++
		l, ok := fsm.EntryTypeLevel(fsm.CommandType(typ))
		if !ok {
			t.Errorf("entry type %d (%s) is applied but declares no feature level in level.go", typ, fsm.CommandType(typ))
			continue
		}
		if l < fsm.LevelBase || l > fsm.CurrentLevel {
			t.Errorf("entry type %d (%s) declares level %d, outside [%d, %d]", typ, fsm.CommandType(typ), l, fsm.LevelBase, fsm.CurrentLevel)
		}
		if strings.HasPrefix(fsm.CommandType(typ).String(), "command(") {
			t.Errorf("entry type %d has no name", typ)
		}
	}
	if known != 17 {
		t.Errorf("%d known entry types, want 17: a new one needs its level declared (and this count raised)", known)
	}
	for typ := 18; typ < int(fsm.IgnoreUnknownTypeFlag); typ++ {
		if _, ok := fsm.EntryTypeLevel(fsm.CommandType(typ)); ok {
			t.Errorf("entry type %d declares a level but Apply does not know it", typ)
		}
	}
}

func TestLevels_InfoNamesTypesAndFormats(t *testing.T) {
	for _, tc := range []struct {
		level           fsm.FeatureLevel
		maxType, format int
	}{
		{fsm.LevelBase, 10, 4},
		{fsm.LevelRaiseAndShards, 14, 5},
		{fsm.LevelClusterLevel, 15, 6},
	} {
		got := fsm.LevelInfo(tc.level)
		if got.Level != int(tc.level) || got.MaxEntryType != tc.maxType || got.SnapshotFormat != tc.format {
			t.Errorf("LevelInfo(%d) = %+v, want max type %d, format %d", tc.level, got, tc.maxType, tc.format)
		}
	}
	if fsm.LevelInfo(fsm.CurrentLevel).SnapshotFormat != int(fsm.SnapshotVersion) {
		t.Errorf("the current level's format is not the newest this binary writes")
	}
}

func TestLevels_RequiredLevelOfEntries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry []byte
		want  fsm.FeatureLevel
	}{
		{"single block", fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 1, Min: 1}), fsm.LevelBase},
		{"grouped blocks", fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: []fsm.BlockRequest{{Name: "a", Count: 1, Min: 1}, {Name: "b", Count: 1, Min: 1}}}), fsm.LevelRaiseAndShards},
		{"raise", fsm.EncodeRaiseSequence(fsm.RaiseSequence{Name: "s", AtLeast: 5}), fsm.LevelRaiseAndShards},
		{"set level", fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.CurrentLevel}), fsm.LevelClusterLevel},
	} {
		got, err := fsm.RequiredLevel(tc.entry)
		if err != nil || got != tc.want {
			t.Errorf("%s: RequiredLevel = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	if _, err := fsm.RequiredLevel([]byte{0x42, '{', '}'}); !errors.Is(err, fsm.ErrInvalidCommand) {
		t.Errorf("an unknown type: %v", err)
	}
}

// A restore is validated by each node's own snapshot rules, so it needs the
// level that reads its backup's format; re-encoded, a backup whose data an
// older binary can carry asks for no more than that binary's level.
func TestLevels_RestoreNeedsItsBackupsFormat(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1000)
	a.mustReserve("s", 10, 1)
	if resp := a.apply(fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.CurrentLevel})); resp != nil {
		t.Fatal(resp)
	}
	var buf bytes.Buffer
	if err := a.f.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint32(buf.Bytes()[8:12]); v != 4 {
		t.Fatalf("a backup of level-1 data at cluster level %d is format %d, want 4 (the level is not data)", fsm.CurrentLevel, v)
	}
	restore := func(b []byte) []byte { return fsm.EncodeRestoreBackup(fsm.RestoreBackup{Backup: b, Advance: 10}) }
	if l, err := fsm.RequiredLevel(restore(buf.Bytes())); err != nil || l != fsm.LevelBase {
		t.Fatalf("restore of a v4 backup needs %d, %v; want %d", l, err, fsm.LevelBase)
	}
	v5 := append([]byte(nil), buf.Bytes()...)
	binary.BigEndian.PutUint32(v5[8:12], 5)
	if l, err := fsm.RequiredLevel(restore(v5)); err != nil || l != fsm.LevelRaiseAndShards {
		t.Fatalf("restore of a v5 backup needs %d, %v; want %d", l, err, fsm.LevelRaiseAndShards)
	}
	re, err := fsm.ReencodeBackup(v5)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint32(re[8:12]); v != 4 {
		t.Fatalf("re-encoded v5 backup of level-1 data is format %d, want 4", v)
	}
	// Data an older binary cannot carry keeps the format that carries it.
	a.mustRaise("s", 500)
	buf.Reset()
	if err := a.f.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	if l, err := fsm.RequiredLevel(restore(buf.Bytes())); err != nil || l != fsm.LevelRaiseAndShards {
		t.Fatalf("restore of a backup with a raise record needs %d, %v; want %d", l, err, fsm.LevelRaiseAndShards)
	}
	nine := append([]byte(nil), buf.Bytes()...)
	binary.BigEndian.PutUint32(nine[8:12], 9)
	if _, err := fsm.RequiredLevel(restore(nine)); !errors.Is(err, fsm.ErrInvalidCommand) || !strings.Contains(err.Error(), "format 9") {
		t.Fatalf("restore of a format-9 backup: %v", err)
	}
}

// The level only rises; a level this binary does not know stops the node
// with a message naming both levels.
func TestLevels_SetFeatureLevel_RisesOnly_UnknownStops(t *testing.T) {
	a := newApplier(t)
	if a.f.ClusterLevel() != fsm.LevelBase {
		t.Fatalf("a new FSM is at level %d, want %d", a.f.ClusterLevel(), fsm.LevelBase)
	}
	if resp := a.apply(fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.CurrentLevel})); resp != nil {
		t.Fatal(resp)
	}
	if resp := a.apply(fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.LevelBase})); resp != nil {
		t.Fatal(resp)
	}
	if a.f.ClusterLevel() != fsm.CurrentLevel {
		t.Fatalf("level %d after a lower entry, want %d (never lowers)", a.f.ClusterLevel(), fsm.CurrentLevel)
	}
	wantErr(t, a.apply(fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: 0})), fsm.ErrInvalidCommand)
	a.index++
	msg := mustPanic(t, func() {
		a.f.Apply(logEntry(a.index, 1, fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.CurrentLevel + 1})))
	})
	for _, want := range []string{fmt.Sprintf("feature level is %d", fsm.CurrentLevel+1), fmt.Sprintf("levels up to %d", fsm.CurrentLevel)} {
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q does not say %q", msg, want)
		}
	}
	assertUnlocked(t, a.f)
}

// A node restarting into a cluster whose recorded level its binary does not
// know refuses the snapshot, naming both levels, rather than serve from it.
func TestLevels_SnapshotOfAnUnknownLevel_RefusedNamingBoth(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 1000)
	if resp := a.apply(fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: fsm.CurrentLevel})); resp != nil {
		t.Fatal(resp)
	}
	b := persist(t, a.f)
	want := []byte(fmt.Sprintf(`"feature_level":%d`, fsm.CurrentLevel))
	if !bytes.Contains(b, want) {
		t.Fatalf("snapshot does not record the level: %s", b[12:])
	}
	future := bytes.Replace(b, want, []byte(fmt.Sprintf(`"feature_level":%d`, fsm.CurrentLevel+1)), 1)
	err := fsm.New().Restore(io.NopCloser(bytes.NewReader(future)))
	var ul *fsm.UnknownLevelError
	if !errors.As(err, &ul) || ul.Cluster != fsm.CurrentLevel+1 || ul.Known != fsm.CurrentLevel || !strings.Contains(err.Error(), fmt.Sprintf("feature level is %d", fsm.CurrentLevel+1)) {
		t.Fatalf("restore of a level-%d snapshot: %v", fsm.CurrentLevel+1, err)
	}
}
