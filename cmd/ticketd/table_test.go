package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testkit"
)

// tableRows reads a table the way a person does: the header's columns, and
// each row's cell under each column. Columns are found where every line has
// two or more blanks in a row, so empty cells and cells with one blank in
// them ("78.0 GiB") read as they are.
func tableRows(t *testing.T, text string) (headers []string, rows []map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	width := 0
	for _, l := range lines {
		width = max(width, len(l))
	}
	blank := make([]bool, width+2)
	for i := range blank {
		blank[i] = true
		for _, l := range lines {
			if i < len(l) && l[i] != ' ' {
				blank[i] = false
			}
		}
	}
	type span struct{ from, to int }
	var spans []span
	for i := 0; i < width; {
		if blank[i] {
			i++
			continue
		}
		j := i
		for j < width && !(blank[j] && blank[j+1]) {
			j++
		}
		spans = append(spans, span{i, j})
		i = j
	}
	cell := func(l string, s span) string {
		if s.from >= len(l) {
			return ""
		}
		return strings.TrimSpace(l[s.from:min(s.to, len(l))])
	}
	for _, s := range spans {
		headers = append(headers, cell(lines[0], s))
	}
	for _, l := range lines[1:] {
		r := map[string]string{}
		for i, s := range spans {
			r[headers[i]] = cell(l, s)
		}
		rows = append(rows, r)
	}
	return headers, rows
}

// sections splits an output at its blank lines.
func sections(out string) []string { return strings.Split(strings.TrimRight(out, "\n"), "\n\n") }

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != 0 || errs != "" {
		t.Fatalf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	t.Logf("ticketd %s\n%s", strings.Join(args[:len(args)-1], " "), out)
	return out
}

var stamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

func TestTables_DefaultForPeople_EveryMemberSequenceLeaseAndRecord(t *testing.T) {
	tc, addr := outputCluster(t)

	// sequences: every value is deterministic, so the whole table is
	// (nothing reserves during the rate window: RATE is 0/s).
	const seqTable = `SEQUENCE  NEXT            REMAINING    LEFT  RATE  START                  MAX
invoices  1000                 1000  100.0%   0/s   1000                 1999
orders    1281  9223372036854774527   99.9%   0/s      1  9223372036854775807
`
	if out := mustRun(t, "sequences", addr); out != seqTable {
		t.Errorf("sequences:\n%s\nwant:\n%s", out, seqTable)
	}
	if out := mustRun(t, "sequences", "-o", "table", addr); out != seqTable {
		t.Errorf("sequences -o table differs from the default:\n%s", out)
	}
	const oneTable = `SEQUENCE  NEXT  REMAINING    LEFT  RATE  START   MAX
invoices  1000       1000  100.0%   0/s   1000  1999
`
	if out := mustRun(t, "sequences", "invoices", addr); out != oneTable {
		t.Errorf("sequences invoices:\n%s\nwant:\n%s", out, oneTable)
	}

	// status: the summary, one row per member, then the capacity. A
	// follower may be an entry behind just after the writes above (and the
	// table says so): wait until every member has applied them.
	var out string
	testkit.Eventually(t, 10*time.Second, 50*time.Millisecond, "every member ready in the status table", func() bool {
		out = mustRun(t, "status", addr)
		sec := sections(out)
		if len(sec) < 2 {
			return false
		}
		_, rows := tableRows(t, sec[1])
		ready := 0
		for _, r := range rows {
			if r["READY"] == "yes" && (r["STATE"] == "Leader" || r["STATE"] == "Follower") {
				ready++
			}
		}
		return ready == 3
	})
	sec := sections(out)
	summary := regexp.MustCompile(`^cluster as n\d sees it: leader n\d, term [1-9]\d*; 3 of 3 members answered; Raft TLS off, API TLS off\n` +
		`cluster feature level ([1-9]) \(every node at ([1-9])\)$`).FindStringSubmatch(sec[0])
	if len(sec) != 4 || summary == nil || summary[1] != summary[2] {
		t.Fatalf("status: want the summary and level lines, members, sequences and namespaces; got:\n%s", out)
	}
	headers, rows := tableRows(t, sec[1])
	wantHeaders := "MEMBER API VOTER VERSION LEVEL STATE READY TERM COMMIT APPLIED LAG LAST CONTACT STORAGE FREE LOG SNAPSHOTS PROBLEM"
	if strings.Join(headers, " ") != wantHeaders || len(rows) != 3 {
		t.Fatalf("status members: headers %q, %d rows; want %q and 3 rows", headers, len(rows), wantHeaders)
	}
	leaders, term := 0, rows[0]["TERM"]
	for i, r := range rows {
		id := "n" + strconv.Itoa(i+1)
		if r["MEMBER"] != id || r["API"] != tc.Node(id).HTTPAddr || r["VOTER"] != "yes" || r["READY"] != "yes" ||
			r["STORAGE"] != "ok" || r["TERM"] != term || r["PROBLEM"] != "" || !strings.HasSuffix(r["FREE"], "iB") {
			t.Errorf("status row %d: %v", i, r)
		}
		// Every member runs this binary: the same release and level, and
		// the level the line above says every node is at ("-", a binary
		// that reports none, counts as 1).
		if r["VERSION"] != rows[0]["VERSION"] || r["LEVEL"] != rows[0]["LEVEL"] ||
			!(r["LEVEL"] == summary[2] || r["LEVEL"] == "-" && summary[2] == "1") {
			t.Errorf("status row %d: version %q level %q; want those of n1 (%q, %q) and the level line's %s",
				i, r["VERSION"], r["LEVEL"], rows[0]["VERSION"], rows[0]["LEVEL"], summary[2])
		}
		for _, col := range []string{"TERM", "COMMIT", "APPLIED", "LAG"} {
			if _, err := strconv.ParseUint(r[col], 10, 64); err != nil {
				t.Errorf("status row %d: %s %q is not a count", i, col, r[col])
			}
		}
		switch r["STATE"] {
		case "Leader":
			leaders++
			if r["LAST CONTACT"] != "-" {
				t.Errorf("the leader's last contact: %q, want -", r["LAST CONTACT"])
			}
		case "Follower":
		default:
			t.Errorf("status row %d: state %q", i, r["STATE"])
		}
	}
	if leaders != 1 {
		t.Errorf("status: %d leaders", leaders)
	}
	wantCap := "SEQUENCE            REMAINING    LEFT\ninvoices                 1000  100.0%\norders    9223372036854774527   99.9%"
	if sec[2] != wantCap || !regexp.MustCompile(`^NAMESPACE  YEARS LEFT\nphotos           \d+\.\d$`).MatchString(sec[3]) {
		t.Errorf("status capacity:\n%s\n\n%s\nwant:\n%s", sec[2], sec[3], wantCap)
	}

	// namespaces --leases
	headers, rows = tableRows(t, mustRun(t, "namespaces", "photos", "--leases", addr))
	if strings.Join(headers, " ") != "WORKER HOLDER STATE GRANTED EXPIRES RELEASED ENDED BY" || len(rows) != 1 {
		t.Fatalf("leases: %q, %v", headers, rows)
	}
	if r := rows[0]; r["WORKER"] != "0" || r["HOLDER"] != "worker-a" || r["STATE"] != "held" || !stamp.MatchString(r["GRANTED"]) ||
		!stamp.MatchString(r["EXPIRES"]) || r["RELEASED"] != "-" || r["ENDED BY"] != "-" {
		t.Errorf("lease row: %v", r)
	}

	// audit --list: a lease grant and a block, then the page's footer.
	sec = sections(mustRun(t, "audit", "--list", addr))
	if len(sec) != 2 || sec[1] != "2 records (the cluster keeps the latest 20000)" {
		t.Fatalf("audit --list: %q", sec)
	}
	headers, rows = tableRows(t, sec[0])
	if strings.Join(headers, " ") != "SEQ INDEX TERM TIME LEADER KIND OF FIRST LAST WORKER HOLDER TOKEN" || len(rows) != 2 {
		t.Fatalf("audit: %q, %v", headers, rows)
	}
	lease, block := rows[0], rows[1]
	if lease["SEQ"] != "1" || lease["KIND"] != "lease" || lease["OF"] != "photos" || lease["WORKER"] != "0" || lease["HOLDER"] != "worker-a" ||
		lease["TOKEN"] == "" || lease["FIRST"] != "" || !stamp.MatchString(lease["TIME"]) || lease["TERM"] != term {
		t.Errorf("audit lease row: %v", lease)
	}
	if block["SEQ"] != "2" || block["KIND"] != "block" || block["OF"] != "orders" || block["FIRST"] != "1" || block["LAST"] != "1280" ||
		block["WORKER"] != "" || block["HOLDER"] != "" || block["TOKEN"] != "" {
		t.Errorf("audit block row: %v", block)
	}
	code, out, errs := runCLI(t, "audit", "--list", "--limit", "1", addr)
	if code != 0 || !strings.HasSuffix(out, "1 records (the cluster keeps the latest 20000); more may follow: --after-seq 1\n") {
		t.Errorf("audit --list --limit 1: exit %d\n%s%s", code, out, errs)
	}

	// A member that does not answer is a row saying why, not a failure.
	down := "n3"
	if tc.Leader(10*time.Second).ID == down {
		down = "n2"
	}
	tc.Kill(down)
	out = mustRun(t, "status", addr)
	sec = sections(out)
	if !strings.Contains(sec[0], "2 of 3 members answered") {
		t.Errorf("status with n3 down: %q", sec[0])
	}
	_, rows = tableRows(t, sec[1])
	for _, r := range rows {
		if r["MEMBER"] == down && (r["STATE"] != "unreachable" || r["TERM"] != "-" || !strings.Contains(r["PROBLEM"], "refused")) {
			t.Errorf("status row of a killed member: %v", r)
		}
	}

	// Without a leader the members are still shown; the capacity, which
	// needs one, is the error.
	for _, n := range tc.Running() {
		if n.ID != down {
			tc.Kill(n.ID)
			break
		}
	}
	code, out, errs = runCLI(t, "status", addr)
	t.Logf("status with 2 of 3 down: exit %d\n%s%s", code, out, errs)
	if sec = sections(out); code != 1 || len(sec) != 2 || !strings.Contains(sec[0], "1 of 3 members answered") ||
		!strings.HasPrefix(errs, "ticketd: capacity: ") || strings.Count(errs, "ticketd:") != 1 {
		t.Errorf("status without a quorum: exit %d\n%s%s", code, out, errs)
	}
	// The hint does not send the person to the command they just ran.
	if strings.Contains(errs, "`ticketd status`") {
		t.Errorf("status without a quorum: the hint points at status itself:\n%s", errs)
	}
}

func TestOutputFlag_BadValue_UsageErrorNamingTheFormats(t *testing.T) {
	for _, args := range [][]string{
		{"status", "-o", "yaml"},
		{"sequences", "--output=wide"},
		{"namespaces", "photos", "--leases", "-o", "csv"},
		{"audit", "--list", "-o", "JSON"},
	} {
		code, out, errs := runCLI(t, append(args, "--addr=http://127.0.0.1:1")...)
		if code != 2 || out != "" || !strings.Contains(errs, "want table or json") || strings.Count(errs, "ticketd:") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and the allowed values", args, code, out, errs)
		}
	}
	// The commands whose output stays JSON refuse a table rather than
	// print JSON when one was asked for.
	for _, args := range [][]string{{"audit", "-o", "table"}, {"namespaces", "-o", "table"}} {
		if code, _, errs := runCLI(t, append(args, "--addr=http://127.0.0.1:1")...); code != 2 || !strings.Contains(errs, "prints a table") {
			t.Errorf("%q: exit %d, %q", args, code, errs)
		}
	}
}
