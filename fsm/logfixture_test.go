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
}

// TestLogFixture_V11 replays a hand-written log of single-block (type 2) and
// batched (type 11) entries and compares the result with the golden file
// written when type 11 was introduced (-update rewrites it): a later change
// that grants these entries anything else would let a node on the new binary
// diverge from one that applied the same log before it.
func TestLogFixture_V11(t *testing.T) {
	raw, err := os.ReadFile(logFixtureV11)
	if err != nil {
		t.Fatal(err)
	}
	f := fsm.New()
	var got logGolden
	sc := bufio.NewScanner(bytes.NewReader(raw))
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
	gotJSON, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON = append(gotJSON, '\n')
	if *update {
		if _, err := os.Stat(logFixtureV11Golden); err == nil {
			t.Fatalf("refusing to overwrite %s: it records what the log granted when type 11 was introduced", logFixtureV11Golden)
		}
		if err := os.WriteFile(logFixtureV11Golden, gotJSON, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(logFixtureV11Golden)
	if err != nil {
		t.Fatalf("read golden (generate it with go test ./fsm/ -run TestLogFixture_V11 -update): %v", err)
	}
	if !bytes.Equal(gotJSON, want) {
		t.Fatalf("the fixture log no longer applies as it did\n got: %s\nwant: %s", gotJSON, want)
	}
	if rep := f.CheckAudit(); len(rep.Violations) != 0 {
		t.Fatalf("probe: %+v", rep.Violations)
	}
}
