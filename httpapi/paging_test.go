package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testkit"
)

// listPage gets one page of GET /v1/sequences with this raw query.
func (n *node) listPage(tb testing.TB, query string) api.SequenceList {
	tb.Helper()
	r := n.MustCall(tb, http.MethodGet, "/v1/sequences?"+query, nil)
	expectJSON(tb, "list "+query, r, http.StatusOK)
	var l api.SequenceList
	testkit.DecodeStrict(tb, r.Body, &l)
	return l
}

// TestAPI_ListSequences_PagesEverySequenceOnceInByteOrder creates 2,500
// sequences in an order unrelated to their names and pages through them
// 1,000 at a time: each comes exactly once, in byte order, "next" is on
// every page but the last; sequences created between pages come later iff
// their names are after the cursor; bad parameters are 400 problems that
// name the parameter.
func TestAPI_ListSequences_PagesEverySequenceOnceInByteOrder(t *testing.T) {
	n := startNode(t)
	const total = 2500
	names := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				r := n.MustCall(t, http.MethodPut, "/v1/sequences/"+name, nil)
				if r.Status != http.StatusCreated {
					t.Errorf("create %s: %d %s", name, r.Status, r.Body)
				}
			}
		}()
	}
	for i := 0; i < total; i++ {
		names <- fmt.Sprintf("p%05d", (i*7919)%total) // 7919 is prime: a permutation
	}
	close(names)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Without parameters: the first page of the default size, and a cursor.
	first := n.listPage(t, "")
	if len(first.Sequences) != api.DefaultSequencePage || first.Sequences[0].Name != "p00000" || first.Next != "p00999" {
		t.Fatalf("first page: %d sequences from %q, next %q; want %d from p00000, next p00999",
			len(first.Sequences), first.Sequences[0].Name, first.Next, api.DefaultSequencePage)
	}

	var got []string
	late := map[string]bool{} // created between pages: whether it comes after the cursor
	after, pages := "", 0
	for {
		q := "limit=1000"
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		p := n.listPage(t, q)
		pages++
		for _, s := range p.Sequences {
			got = append(got, s.Name)
		}
		if p.Next == "" {
			if len(p.Sequences) == 1000 && pages < 3 {
				t.Fatalf("page %d is full but has no next", pages)
			}
			break
		}
		if p.Next != p.Sequences[len(p.Sequences)-1].Name {
			t.Fatalf("page %d: next %q, last name %q", pages, p.Next, p.Sequences[len(p.Sequences)-1].Name)
		}
		after = p.Next
		for _, name := range []string{"a-before-" + after, "p" + after[1:] + "-after"} {
			r := n.MustCall(t, http.MethodPut, "/v1/sequences/"+name, nil)
			expectJSON(t, "create "+name, r, http.StatusCreated)
			late[name] = name > after
		}
	}
	if pages != 3 {
		t.Errorf("%d pages, want 3 (1000 + 1000 + 502)", pages)
	}
	seen := map[string]bool{}
	for i, name := range got {
		if seen[name] {
			t.Fatalf("%q listed twice", name)
		}
		seen[name] = true
		if i > 0 && got[i-1] >= name {
			t.Fatalf("%q listed after %q: not in byte order", name, got[i-1])
		}
	}
	for i := 0; i < total; i++ {
		if name := fmt.Sprintf("p%05d", i); !seen[name] {
			t.Errorf("%q never listed", name)
		}
	}
	for name, want := range late {
		if seen[name] != want {
			t.Errorf("%q, created between pages: listed %v, want %v", name, seen[name], want)
		}
	}
	if len(got) != total+len(late)/2 {
		t.Errorf("listed %d, want %d", len(got), total+len(late)/2)
	}

	// The last page, exactly full: no next; after the last name: empty.
	last := n.listPage(t, "after=p02497&limit=3")
	if len(last.Sequences) != 2 || last.Next != "" {
		t.Errorf("after p02497, limit 3: %+v, want p02498, p02499 and no next", last)
	}
	if l := n.listPage(t, "after=p02499"); len(l.Sequences) != 0 || l.Next != "" {
		t.Errorf("after the last name: %+v, want no sequences and no next", l)
	}
	if l := n.listPage(t, "after=&limit=1"); len(l.Sequences) != 1 || l.Sequences[0].Name != "a-before-p00999" || l.Next != "a-before-p00999" {
		t.Errorf("empty after, limit 1: %+v, want the first name and it as next", l)
	}
	if l := n.listPage(t, fmt.Sprintf("limit=%d", api.MaxSequencePage)); len(l.Sequences) != total+len(late) || l.Next != "" {
		t.Errorf("limit %d: %d sequences, next %q; want all %d and no next", api.MaxSequencePage, len(l.Sequences), l.Next, total+len(late))
	}

	for _, c := range []struct{ query, param, value string }{
		{"limit=0", "limit", "0"},
		{"limit=-1", "limit", "-1"},
		{fmt.Sprintf("limit=%d", api.MaxSequencePage+1), "limit", fmt.Sprint(api.MaxSequencePage + 1)},
		{"limit=ten", "limit", "ten"},
		{"limit=", "", ""}, // empty is absent: not an error
		{"after=a%2Fb", "after", "a/b"},
		{"after=a+b", "after", "' '"},
		{"after=" + strings.Repeat("x", api.MaxSequenceNameLen+1), "after", "65"},
	} {
		if c.param == "" {
			n.listPage(t, c.query)
			continue
		}
		r := n.MustCall(t, http.MethodGet, "/v1/sequences?"+c.query, nil)
		expectProblem(t, "list "+c.query, r, http.StatusBadRequest, api.ProblemBadRequest, `"`+c.param+`"`, c.value)
	}
}
