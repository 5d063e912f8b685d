package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// TestClient_Sequences_WalksEveryPage: Sequences lists more sequences than a
// page holds, each once and in byte order, as it listed them all before the
// server paged; SequencesPage hands out one page and its cursor.
func TestClient_Sequences_WalksEveryPage(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	const total = 2*api.MaxSequencePage + 17
	for i := 0; i < total; i++ {
		f.addSequence(fmt.Sprintf("s%05d", (i*7919)%total), 1, api.DefaultMax)
	}
	c := newClient(t, []string{f.URL()})
	ctx := ctxFor(t, 10*time.Second)

	before, _, _ := f.stats()
	all, err := c.Sequences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != total {
		t.Fatalf("Sequences listed %d, want %d", len(all), total)
	}
	for i, s := range all {
		if want := fmt.Sprintf("s%05d", i); s.Name != want {
			t.Fatalf("Sequences()[%d] = %q, want %q", i, s.Name, want)
		}
	}
	if req, _, _ := f.stats(); req-before != 3 {
		t.Errorf("Sequences made %d requests, want 3 pages", req-before)
	}

	p, err := c.SequencesPage(ctx, "", 0)
	if err != nil || len(p.Sequences) != api.DefaultSequencePage || p.Next != fmt.Sprintf("s%05d", api.DefaultSequencePage-1) {
		t.Fatalf("SequencesPage(\"\", 0) = %d sequences, next %q, %v; want the default page", len(p.Sequences), p.Next, err)
	}
	p, err = c.SequencesPage(ctx, p.Next, 2)
	if err != nil || len(p.Sequences) != 2 || p.Sequences[0].Name != fmt.Sprintf("s%05d", api.DefaultSequencePage) {
		t.Fatalf("SequencesPage(next, 2) = %+v, %v", p, err)
	}
	p, err = c.SequencesPage(ctx, fmt.Sprintf("s%05d", total-2), 5)
	if err != nil || len(p.Sequences) != 1 || p.Next != "" {
		t.Fatalf("the last page = %+v, %v; want one sequence and no next", p, err)
	}
}

// TestClient_Sequences_ServerCursorThatDoesNotAdvance_Error: a server whose
// "next" does not move forward gets an error, not an endless walk.
func TestClient_Sequences_ServerCursorThatDoesNotAdvance_Error(t *testing.T) {
	noLeak(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sequences", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.SequenceList{Sequences: []api.Sequence{{Name: "a"}}, Next: "a"})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := newClient(t, []string{srv.URL})
	if _, err := c.Sequences(ctxFor(t, 5*time.Second)); err == nil {
		t.Fatal("Sequences over a cursor that stays at \"a\" returned no error")
	}
}
