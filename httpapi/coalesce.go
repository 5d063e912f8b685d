package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// Coalesced forwarding (issue #13). A follower that forwarded every
// reservation on its own paid a whole HTTP round trip to the leader per
// request, and the leader a whole request: through a follower a reservation
// cost nearly twice what it cost at the leader. Instead, the reservations a
// follower receives for one sequence while a forwarded one is in flight wait
// for it to end and then go to the leader together, as one reservation of
// their summed counts; the follower cuts the leader's range into each
// caller's part, in arrival order.
//
// Linearizable still: every caller of a batch arrived before the batch was
// sent, so the leader cut the batch's range, and confirmed its leadership,
// after each of them began; a caller's part lies inside that range. Unique
// still: the parts are disjoint pieces of one range the leader handed out.
//
// Anything but a well-formed 200 for the whole batch sends each caller's
// own request to the leader through the proxy, as before, so every error a
// caller sees is the leader's answer to that caller's request: a batch that
// would exhaust a sequence where its parts alone would not loses nothing. A
// batch whose leader cannot be reached fails its callers with 503 at once,
// as the proxy would, rather than trying each caller again.

// maxBatchCallers bounds the callers of one coalesced reservation.
const maxBatchCallers = 256

// batchKey is what must be equal for reservations to go to the leader
// together: the leader, the sequence and the caller's credentials (the
// leader checks the token, and only one token goes with a batch).
type batchKey struct {
	leader, sequence, authorization string
}

type batchQueue struct {
	running bool
	waiting []*batchCaller // for the flight after the one in the air
}

type batchCaller struct {
	count int64
	done  chan struct{}
	// Set before done closes:
	first  int64         // the caller's part of the batch's range
	answer *leaderAnswer // the leader refused a batch of this caller alone: its answer
	alone  bool          // the leader refused a batch of several: forward this request on its own
	err    error         // the leader could not be reached
}

// leaderAnswer is an answer of the leader other than a range, relayed as it
// came.
type leaderAnswer struct {
	status int
	header http.Header
	body   []byte
}

// write relays a to w, without the headers of the leader's connection.
func (a *leaderAnswer) write(w *echo.Response) error {
	for k, vs := range a.header {
		switch k {
		case "Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length", "Date", RequestIDHeader:
			continue // the connection's, or this node's own
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(a.status)
	_, err := w.Write(a.body)
	return err
}

type coalescer struct {
	s      *Service
	client *http.Client

	mu     sync.Mutex
	queues map[batchKey]*batchQueue
}

func newCoalescer(s *Service) *coalescer {
	return &coalescer{s: s, client: &http.Client{Transport: s.transport}, queues: map[batchKey]*batchQueue{}}
}

// forwardReserve is leaderOnly for reservations: the leader serves them, a
// follower coalesces them.
func (s *Service) forwardReserve(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		addr, err := s.forwardTo(c)
		switch {
		case err != nil:
			return err
		case addr == "":
			return next(c) // this node is the serving leader
		}
		// Checked as the leader checks it; the body is kept, so that a
		// caller whose batch fails can be forwarded on its own.
		r := c.Request()
		var body []byte
		name, count, err := reserveInput(c, func(c echo.Context) (int64, error) {
			if body, err = readBody(c, nil); err != nil {
				return 0, bodyReadError(err)
			}
			return reserveCountOf(body)
		})
		if err != nil {
			return err
		}
		c.Response().Header().Set(api.LeaderHeader, addr)
		key := batchKey{leader: addr, sequence: name, authorization: r.Header.Get("Authorization")}
		bc := &batchCaller{count: count, done: make(chan struct{})}
		s.coalesce.enqueue(key, bc, r.Header.Get(RequestIDHeader))
		select {
		case <-bc.done:
		case <-r.Context().Done():
			// The caller left; its part, if any, becomes a gap.
			return r.Context().Err()
		}
		switch {
		case bc.err != nil:
			return problem(http.StatusServiceUnavailable, api.ProblemUnavailable, "leader unreachable", bc.err.Error())
		case bc.answer != nil:
			return bc.answer.write(c.Response())
		case bc.alone:
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			s.proxy(addr).ServeHTTP(c.Response(), r)
			return nil
		}
		return writeRange(c, api.Range{Sequence: name, First: bc.first, Last: bc.first + count - 1})
	}
}

// enqueue adds bc to the next flight of key, and starts the flights if none
// is in the air. requestID names the first flight in the leader's log.
func (co *coalescer) enqueue(key batchKey, bc *batchCaller, requestID string) {
	co.mu.Lock()
	q := co.queues[key]
	if q == nil {
		q = &batchQueue{}
		co.queues[key] = q
	}
	q.waiting = append(q.waiting, bc)
	if q.running {
		co.mu.Unlock()
		return
	}
	q.running = true
	co.mu.Unlock()
	go co.fly(key, q, requestID)
}

// fly sends the waiting callers of q to the leader, batch after batch,
// until none is left.
func (co *coalescer) fly(key batchKey, q *batchQueue, requestID string) {
	for {
		co.mu.Lock()
		batch, sum := takeBatch(q)
		if len(batch) == 0 {
			q.running = false
			delete(co.queues, key) // an idle key costs nothing
			co.mu.Unlock()
			return
		}
		co.mu.Unlock()
		first, answer, err := co.send(key, sum, requestID)
		for _, bc := range batch {
			switch {
			case err != nil:
				bc.err = err
			case answer != nil && len(batch) == 1:
				bc.answer = answer
			case answer != nil:
				bc.alone = true
			default:
				bc.first = first
				first += bc.count
			}
			close(bc.done)
		}
		requestID = ""
	}
}

// takeBatch takes the waiting callers whose counts together fit one
// reservation.
func takeBatch(q *batchQueue) (batch []*batchCaller, sum int64) {
	n := 0
	for n < len(q.waiting) && n < maxBatchCallers {
		c := q.waiting[n].count
		if n > 0 && sum+c > api.MaxReserveCount {
			break
		}
		sum += c
		n++
	}
	batch = q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	return batch, sum
}

// send reserves count IDs of key's sequence at the leader and returns the
// first; or the leader's answer when it was anything else; or why the
// leader could not be asked.
func (co *coalescer) send(key batchKey, count int64, requestID string) (int64, *leaderAnswer, error) {
	s := co.s
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	url := s.scheme + "://" + key.leader + "/v1/sequences/" + key.sequence + "/ranges"
	body := []byte(`{"count":` + strconv.FormatInt(count, 10) + `}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ForwardedHeader, s.store.ID())
	if key.authorization != "" {
		req.Header.Set("Authorization", key.authorization)
	}
	if requestID != "" {
		req.Header.Set(RequestIDHeader, requestID)
	}
	resp, err := co.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("forwarding to the leader at %s failed: %w", key.leader, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, api.MaxBodyBytes))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the leader's answer from %s: %w", key.leader, err)
	}
	answer := &leaderAnswer{status: resp.StatusCode, header: resp.Header, body: data}
	if resp.StatusCode != http.StatusOK {
		return 0, answer, nil
	}
	first, ok := grantedFirst(data, key.sequence, count)
	if !ok {
		// Granted, but not as asked: serve nobody from it.
		return 0, nil, fmt.Errorf("the leader at %s answered a reservation of %d IDs of %q with %q", key.leader, count, key.sequence, data)
	}
	return first, nil, nil
}

// grantedFirst reads the leader's 200 answer to a reservation of count IDs
// of sequence: the first ID of its range, if the answer is that range.
func grantedFirst(data []byte, sequence string, count int64) (int64, bool) {
	var r api.Range
	if count < 1 || json.Unmarshal(data, &r) != nil || r.Sequence != sequence || r.First < 1 || r.Last-r.First+1 != count {
		return 0, false
	}
	return r.First, true
}
