package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/api"
)

// fakeServer is an in-process stand-in for a ticketd node: it speaks the
// HTTP contract of docs/http-api.md (sequences, ranges, cluster, members, problem
// details, Retry-After on 503) from memory, and lets a test inject failures
// and delays. It is not a cluster: it never forwards and never fails over.
type fakeServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	seqs     map[string]*fakeSeq
	members  map[string]api.JoinRequest
	token    string        // if set, requests must carry "Bearer token"
	fail     *injected     // answer the next requests with this
	delay    time.Duration // before answering a range request
	hang     bool          // range requests hang until the client gives up
	rewind   bool          // answer the next range from the sequence's start (a broken server)
	requests int
	ranges   int // range requests
	inflight int // range requests being served
	maxIn    int // most range requests served at once
	counts   []int64
}

type fakeSeq struct {
	start, max int64
	next       int64 // 0 once exhausted
}

// injected answers requests with a status instead of serving them.
type injected struct {
	status     int
	typ        string
	retryAfter string
	times      int // how many requests; <0: all
	rawBody    string
}

func newFake() *fakeServer {
	f := &fakeServer{seqs: map[string]*fakeSeq{}, members: map[string]api.JoinRequest{}}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/sequences/{name}", f.create)
	mux.HandleFunc("GET /v1/sequences", f.list)
	mux.HandleFunc("GET /v1/sequences/{name}", f.get)
	mux.HandleFunc("POST /v1/sequences/{name}/ranges", f.reserve)
	mux.HandleFunc("GET /v1/cluster", f.cluster)
	mux.HandleFunc("POST /v1/cluster/members", f.join)
	mux.HandleFunc("DELETE /v1/cluster/members/{id}", f.remove)
	f.srv = httptest.NewServer(f.gatekeeper(mux))
	return f
}

func (f *fakeServer) URL() string { return f.srv.URL }

func (f *fakeServer) Close() { f.srv.Close() }

// addSequence creates a sequence directly.
func (f *fakeServer) addSequence(name string, start, max int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seqs[name] = &fakeSeq{start: start, max: max, next: start}
}

// failNext answers the next n requests (all, if n < 0) with status.
func (f *fakeServer) failNext(n, status int, typ, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = &injected{status: status, typ: typ, retryAfter: retryAfter, times: n}
	if n == 0 {
		f.fail = nil
	}
}

func (f *fakeServer) set(fn func(f *fakeServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeServer) stats() (requests, ranges, maxInflight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.ranges, f.maxIn
}

// rangeCounts returns the counts of the range requests, in order.
func (f *fakeServer) rangeCounts() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.counts...)
}

func (f *fakeServer) gatekeeper(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		token, inj := f.token, f.fail
		if inj != nil && inj.times != 0 {
			if inj.times > 0 {
				inj.times--
			}
		} else {
			inj = nil
		}
		f.mu.Unlock()
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			writeProblem(w, http.StatusUnauthorized, api.Problem{Type: "about:blank", Title: "unauthorized"}, "")
			return
		}
		if inj != nil {
			if inj.rawBody != "" {
				w.WriteHeader(inj.status)
				_, _ = io.WriteString(w, inj.rawBody)
				return
			}
			writeProblem(w, inj.status, api.Problem{Type: inj.typ, Title: strings.ToLower(http.StatusText(inj.status)), Detail: "injected by the test"}, inj.retryAfter)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeProblem(w http.ResponseWriter, status int, p api.Problem, retryAfter string) {
	p.Status = status
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func badRequest(w http.ResponseWriter, detail string) {
	writeProblem(w, http.StatusBadRequest, api.Problem{Type: api.ProblemBadRequest, Title: "bad request", Detail: detail}, "")
}

func notFound(w http.ResponseWriter, name string) {
	writeProblem(w, http.StatusNotFound, api.Problem{Type: api.ProblemNotFound, Title: "sequence not found", Detail: fmt.Sprintf("no sequence %q", name)}, "")
}

func view(name string, s *fakeSeq) api.Sequence {
	v := api.Sequence{Name: name, Start: s.start, Max: s.max}
	if s.next != 0 {
		n := s.next
		v.Next = &n
		v.Remaining = s.max - s.next + 1
	}
	return v
}

func (f *fakeServer) create(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := api.ValidateSequenceName(name); err != nil {
		badRequest(w, err.Error())
		return
	}
	var req api.CreateSequenceRequest
	if data, _ := io.ReadAll(r.Body); len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			badRequest(w, err.Error())
			return
		}
	}
	start, max := api.DefaultStart, api.DefaultMax
	if req.Start != nil {
		start = *req.Start
	}
	if req.Max != nil {
		max = *req.Max
	}
	if err := api.ValidateBounds(start, max); err != nil {
		badRequest(w, err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.seqs[name]; ok {
		if s.start != start || s.max != max {
			writeProblem(w, http.StatusConflict, api.Problem{Type: api.ProblemConflict, Title: "sequence exists with different settings"}, "")
			return
		}
		writeJSON(w, http.StatusOK, view(name, s))
		return
	}
	s := &fakeSeq{start: start, max: max, next: start}
	f.seqs[name] = s
	writeJSON(w, http.StatusCreated, view(name, s))
}

// list answers a page as docs/http-api.md says: names strictly after "after",
// in byte order, at most "limit" (default api.DefaultSequencePage), and
// "next" when more follow.
func (f *fakeServer) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	after, limit := r.URL.Query().Get("after"), api.DefaultSequencePage
	if v := r.URL.Query().Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 || l > api.MaxSequencePage {
			writeProblem(w, http.StatusBadRequest, api.Problem{Type: api.ProblemBadRequest, Title: "bad request", Detail: `query parameter "limit"`}, "")
			return
		}
		limit = l
	}
	var names []string
	for name := range f.seqs {
		if name > after {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := api.SequenceList{Sequences: []api.Sequence{}}
	if len(names) > limit {
		names = names[:limit]
		out.Next = names[limit-1]
	}
	for _, name := range names {
		out.Sequences = append(out.Sequences, view(name, f.seqs[name]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (f *fakeServer) get(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.seqs[name]
	if !ok {
		notFound(w, name)
		return
	}
	writeJSON(w, http.StatusOK, view(name, s))
}

func (f *fakeServer) reserve(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req struct {
		Count *int64 `json:"count"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Count == nil {
		badRequest(w, `field "count" is required`)
		return
	}
	if err := api.ValidateCount(*req.Count); err != nil {
		badRequest(w, err.Error())
		return
	}
	f.mu.Lock()
	f.ranges++
	f.counts = append(f.counts, *req.Count)
	f.inflight++
	f.maxIn = max(f.maxIn, f.inflight)
	delay, hang := f.delay, f.hang
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	if hang {
		<-r.Context().Done()
		return
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.seqs[name]
	if !ok {
		notFound(w, name)
		return
	}
	if f.rewind {
		f.rewind = false
		writeJSON(w, http.StatusOK, api.Range{Sequence: name, First: s.start, Last: s.start + *req.Count - 1})
		return
	}
	n := *req.Count
	if s.next == 0 || s.max-s.next+1 < n {
		writeProblem(w, http.StatusConflict, api.Problem{Type: api.ProblemExhausted, Title: "sequence exhausted"}, "")
		return
	}
	first := s.next
	last := first + n - 1
	if last == s.max {
		s.next = 0
	} else {
		s.next = last + 1
	}
	writeJSON(w, http.StatusOK, api.Range{Sequence: name, First: first, Last: last})
}

func (f *fakeServer) cluster(w http.ResponseWriter, r *http.Request) {
	host := strings.TrimPrefix(f.srv.URL, "http://")
	writeJSON(w, http.StatusOK, api.ClusterStatus{Node: "fake1", State: "Leader", Leader: "fake1", Term: 1,
		Members: []api.Member{{ID: "fake1", RaftAddr: host, HTTPAddr: host, Voter: true}}})
}

func (f *fakeServer) join(w http.ResponseWriter, r *http.Request) {
	var req api.JoinRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ID == "" {
		badRequest(w, "bad member")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.members[req.ID]; ok && m != req {
		writeProblem(w, http.StatusConflict, api.Problem{Type: api.ProblemConflict, Title: "member conflict"}, "")
		return
	}
	f.members[req.ID] = req
	writeJSON(w, http.StatusOK, api.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
}

func (f *fakeServer) remove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.members[id]; !ok {
		writeProblem(w, http.StatusNotFound, api.Problem{Type: api.ProblemMemberNotFound, Title: "member not found"}, "")
		return
	}
	delete(f.members, id)
	w.WriteHeader(http.StatusNoContent)
}

// deadURL returns the URL of a port nothing listens on (it was just freed).
func deadURL() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

var errTimeout = errors.New("condition not met in time")

// waitFor polls cond every 5 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return errTimeout
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
