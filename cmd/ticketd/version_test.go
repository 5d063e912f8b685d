package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/buildinfo"
)

// `ticketd version` says the release on its first line and the feature
// level on its second; -o json says the same, in the shape of its golden
// file (the release and Go version aside).
func TestVersion_ReleaseAndFeatureLevel_TextAndJSON(t *testing.T) {
	code, out, errs := runCLI(t, "version")
	if code != 0 || errs != "" {
		t.Fatalf("version: exit %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	info := fsm.LevelInfo(fsm.CurrentLevel)
	wantLevel := fmt.Sprintf("feature level %d: log entry types up to %d, snapshot format %d", info.Level, info.MaxEntryType, info.SnapshotFormat)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ticketd "+buildinfo.Version()+" go") || lines[1] != wantLevel {
		t.Fatalf("version:\n%s\nwant \"ticketd %s go...\" then %q", out, buildinfo.Version(), wantLevel)
	}
	if code, dashed, _ := runCLI(t, "--version"); code != 0 || dashed != out {
		t.Errorf("--version: exit %d, %q; want what version prints", code, dashed)
	}

	code, out, errs = runCLI(t, "version", "-o", "json")
	if code != 0 || errs != "" {
		t.Fatalf("version -o json: exit %d\n%s%s", code, out, errs)
	}
	var got versionInfo
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out)
	}
	if got.Version != buildinfo.Version() || got.Feature != api.FeatureLevel(info) {
		t.Errorf("version -o json: %+v; want version %q and feature %+v", got, buildinfo.Version(), info)
	}
	checkGolden(t, "version.json", normalize(out))

	if code, _, errs := runCLI(t, "version", "extra"); code != 2 || !strings.Contains(errs, "no arguments") {
		t.Errorf("version extra: exit %d, %q; want a usage error", code, errs)
	}
}
