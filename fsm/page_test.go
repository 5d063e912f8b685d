package fsm_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// walkPages lists every sequence through SequencesPage, limit at a time,
// checking that every page but the last is full and says more follow.
func walkPages(tb testing.TB, f *fsm.FSM, limit int) []fsm.Sequence {
	tb.Helper()
	var all []fsm.Sequence
	after := ""
	for {
		page, more := f.SequencesPage(after, limit)
		if len(page) > limit {
			tb.Fatalf("SequencesPage(%q, %d) returned %d", after, limit, len(page))
		}
		if more && len(page) != limit {
			tb.Fatalf("SequencesPage(%q, %d) returned %d with more to follow", after, limit, len(page))
		}
		all = append(all, page...)
		if !more {
			return all
		}
		after = page[len(page)-1].Name
	}
}

func TestFSM_SequencesPage_WalksEverySequenceOnceInByteOrder(t *testing.T) {
	a := newApplier(t)
	// Byte order, not a collation: upper case before '_' before lower case.
	names := []string{"b", "a", "B", "a-1", "a.1", "a_1", "A", "0", "zz", "z", "_", "-"}
	for _, n := range names {
		a.mustCreate(n, 1, 10)
	}
	want := []string{"-", "0", "A", "B", "_", "a", "a-1", "a.1", "a_1", "b", "z", "zz"}
	for limit := 1; limit <= len(names)+1; limit++ {
		var got []string
		for _, s := range walkPages(t, a.f, limit) {
			got = append(got, s.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: walked %v, want %v", limit, got, want)
		}
	}
	if !reflect.DeepEqual(walkPages(t, a.f, 5), a.f.Sequences()) {
		t.Fatalf("pages and Sequences() disagree")
	}

	for _, tc := range []struct {
		after string
		limit int
		names []string
		more  bool
	}{
		{"", 3, []string{"-", "0", "A"}, true},
		{"a", 2, []string{"a-1", "a.1"}, true},
		{"a.0", 1, []string{"a.1"}, true},           // an after that names no sequence
		{"a_1", 3, []string{"b", "z", "zz"}, false}, // the last page, exactly full: no more
		{"z", 5, []string{"zz"}, false},
		{"zz", 5, nil, false},
		{"~", 5, nil, false},
		{"", 0, nil, true}, // no room: says whether any follow
		{"zz", 0, nil, false},
	} {
		page, more := a.f.SequencesPage(tc.after, tc.limit)
		var got []string
		for _, s := range page {
			got = append(got, s.Name)
		}
		if !reflect.DeepEqual(got, tc.names) || more != tc.more {
			t.Errorf("SequencesPage(%q, %d) = %v, %v; want %v, %v", tc.after, tc.limit, got, more, tc.names, tc.more)
		}
	}

	// A page is a copy.
	page, _ := a.f.SequencesPage("", 1)
	page[0].Issued = 9
	if a.seq("-").Issued != 0 {
		t.Fatalf("mutating a page changed the FSM")
	}
}

// TestFSM_SequencesPage_SeesMarksAndNewSequences pages while entries apply:
// a page shows the marks as of its call, and a sequence created between
// pages shows up later iff its name is after the cursor.
func TestFSM_SequencesPage_SeesMarksAndNewSequences(t *testing.T) {
	a := newApplier(t)
	rng := rand.New(rand.NewPCG(17, 1))
	created := map[string]bool{}
	for i := 0; i < 500; i++ {
		n := fmt.Sprintf("s%04d", rng.IntN(10000))
		if !created[n] {
			a.mustCreate(n, 1, 1000)
			created[n] = true
		}
	}
	seen := map[string]bool{}
	after := ""
	late := map[string]bool{} // created between pages: whether it comes after the cursor
	for {
		page, more := a.f.SequencesPage(after, 37)
		for _, s := range page {
			if seen[s.Name] || s.Name <= after {
				t.Fatalf("%q listed twice or out of order (after %q)", s.Name, after)
			}
			seen[s.Name] = true
		}
		if !more {
			break
		}
		after = page[len(page)-1].Name
		// Between pages: move a mark, create one sequence before the
		// cursor and one after it.
		a.mustReserve(page[0].Name, 5, 1)
		for _, n := range []string{fmt.Sprintf("%s-before", page[0].Name), after + "-after"} {
			if !created[n] {
				a.mustCreate(n, 1, 1000)
				created[n] = true
				late[n] = n > after
			}
		}
	}
	if len(late) == 0 {
		t.Fatalf("no sequence was created between pages")
	}
	for n, want := range late {
		if seen[n] != want {
			t.Errorf("%q created between pages: listed %v, want %v", n, seen[n], want)
		}
	}
	if got := len(walkPages(t, a.f, 37)); got != len(created) {
		t.Fatalf("a fresh walk lists %d, want %d", got, len(created))
	}
}
