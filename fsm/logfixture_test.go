package fsm_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

const (
	logFixtureV11       = "testdata/log-v11.txt"
	logFixtureV11Golden = "testdata/log-v11.golden.json"
)

// logGolden is what applying a fixture log gave: every answer (errors as
// their text), the final sequences and the audit.
type logGolden struct {
	Answers   []any             `json:"answers"`
	Sequences []fsm.Sequence    `json:"sequences"`
	Audit     []fsm.AuditRecord `json:"audit"`
	// Standby and Fence are left out when nil, so the v11 golden file,
	// written before they existed, reads the same.
	Standby *fsm.Standby `json:"standby,omitempty"`
	Fence   *fsm.Fence   `json:"fence,omitempty"`
}

// TestLogFixture_V11 replays a hand-written log of single-block (type 2) and
// batched (type 11) entries and compares the result with the golden file
// written when type 11 was introduced (-update rewrites it): a later change
// that grants these entries anything else would let a node on the new binary
// diverge from one that applied the same log before it.
func TestLogFixture_V11(t *testing.T) {
	checkLogFixture(t, logFixtureV11, logFixtureV11Golden, "type 11")
}

// TestLogFixture_V16 does the same for a log with the standby's entries
// (type 16, issue #34): its adds, states, removal and fence, and the cap on
// blocks while a standby is recorded.
func TestLogFixture_V16(t *testing.T) {
	checkLogFixture(t, "testdata/log-v16.txt", "testdata/log-v16.golden.json", "type 16")
}

// checkLogFixture applies the fixture log at path and compares every answer,
// the final sequences and the audit with the golden file, which -update
// writes only when it does not exist yet.
func checkLogFixture(t *testing.T, path, golden, introduced string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := fsm.New()
	var got logGolden
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 4)
		if len(fields) != 4 {
			t.Fatalf("fixture line %q: want index term type body", line)
		}
		index, err1 := strconv.ParseUint(fields[0], 10, 64)
		term, err2 := strconv.ParseUint(fields[1], 10, 64)
		typ, err3 := strconv.ParseUint(fields[2], 10, 8)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("fixture line %q: bad index, term or type", line)
		}
		resp := f.Apply(logEntry(index, term, append([]byte{byte(typ)}, fields[3]...)))
		got.Answers = append(got.Answers, normalize(resp))
	}
	got.Sequences = f.Sequences()
	got.Audit = f.Audit(0, fsm.AuditRetention)
	if sb, ok := f.StandbyInfo(); ok {
		got.Standby = &sb
	}
	if fe, ok := f.Fenced(); ok {
		got.Fence = &fe
	}
	gotJSON, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON = append(gotJSON, '\n')
	if *update {
		if _, err := os.Stat(golden); err == nil {
			t.Fatalf("refusing to overwrite %s: it records what the log granted when %s was introduced", golden, introduced)
		}
		if err := os.WriteFile(golden, gotJSON, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (generate it with go test ./fsm/ -run TestLogFixture -update): %v", err)
	}
	if !bytes.Equal(gotJSON, want) {
		t.Fatalf("the fixture log no longer applies as it did\n got: %s\nwant: %s", gotJSON, want)
	}
	if rep := f.CheckAudit(); len(rep.Violations) != 0 {
		t.Fatalf("probe: %+v", rep.Violations)
	}
}
