// Package testkit is the one JSON-over-HTTP helper and the one polling wait
// that the tests of every package share, so that a test says what it sends
// and what it waits for, and not how.
//
// It imports nothing but the standard library, none of the server, so that
// the tests of any module, and the harnesses that start ticketd clusters or
// processes, can use it without an import cycle.
//
// Why one kit: the tests used to carry a helper of their own per package
// (one returned an error on a broken connection, one failed the test, one
// set Content-Type, one did not), and each loop that waited for something
// had its own deadline arithmetic, some of which forgot to fail. Client
// serves every such caller: an answer of any status is an answer (a test
// checks the status and decodes the problem details of a refusal itself),
// and only a request that got no whole answer is an error. Eventually is
// always bounded and, when it gives up, fails the test naming what did not
// happen.
package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// DefaultTimeout bounds a request of a Client whose Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Client sends JSON requests and reads whole answers. Its zero value uses
// http.DefaultClient, no token and DefaultTimeout. A Client is a value: a
// test may keep one per token.
type Client struct {
	// HTTP sends the requests; nil means http.DefaultClient. A test that
	// needs keep-alive connections or TLS brings its own.
	HTTP *http.Client
	// Base is put before every URL, so that a test that talks to one
	// server can write paths; "" means URLs are whole.
	Base string
	// Token, if not "", is sent as "Authorization: Bearer <token>".
	Token string
	// Header is added to every request (after the token, so it may
	// replace it).
	Header http.Header
	// Timeout bounds each request, answer included; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// Response is one answer, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Call sends one request and reads the whole answer, whatever its status.
// body is nil for none; a string or []byte is sent as is (an empty one is no
// body); anything else is encoded as JSON. A non-empty body is sent with
// "Content-Type: application/json" unless Header says otherwise. The URL is
// sent as written (after Base), so a path may hold escapes of its own.
//
// The error is for a request that got no whole answer (refused, timed out,
// cut): callers that provoke faults treat it as an unknown outcome.
func (c Client) Call(method, url string, body any) (Response, error) {
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			return Response{}, fmt.Errorf("%s %s: encode body: %w", method, url, err)
		}
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var rd io.Reader
	if len(data) > 0 {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+url, rd)
	if err != nil {
		return Response{}, err
	}
	if len(data) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, vs := range c.Header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: read answer: %w", method, url, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: got}, nil
}

// MustCall is Call for a test that expects an answer: it fails tb if there
// is none. Call it only from the test's own goroutine.
func (c Client) MustCall(tb testing.TB, method, url string, body any) Response {
	tb.Helper()
	r, err := c.Call(method, url, body)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// Do is Call that decodes a non-empty answer into out (if out is not nil),
// whatever the status: a refusal's problem details land in out as a
// success's value does, and the caller tells them apart by the status. It
// decodes as encoding/json.Unmarshal does (unknown fields are ignored); the
// error is for no answer or an answer that is not JSON of out's shape.
func (c Client) Do(method, url string, body, out any) (int, error) {
	r, err := c.Call(method, url, body)
	if err != nil {
		return 0, err
	}
	if out != nil && len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return r.Status, fmt.Errorf("decode %s: %w", r.Body, err)
		}
	}
	return r.Status, nil
}

// DecodeStrict decodes the JSON value at the start of data into v and fails
// tb if it does not fit: a field that v lacks is an error, so a test notices
// an answer that grew a field it does not check. Numbers decode into v's
// types, so an int64 stays exact.
func DecodeStrict(tb testing.TB, data []byte, v any) {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		tb.Fatalf("decode %s: %v", data, err)
	}
}

// Eventually calls cond every interval until it returns true and fails tb,
// naming what it waited for, if timeout passes first. cond runs at once and
// once more after the last sleep, so a condition that holds is never
// reported as timed out. Call it only from the test's own goroutine.
func Eventually(tb testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	tb.Helper()
	if err := poll(timeout, interval, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}); err != nil {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// EventuallyErr is Eventually for a condition that can say why it does not
// hold yet: it waits until cond returns nil, and on timeout reports cond's
// last error (the state the test saw last) with what.
func EventuallyErr(tb testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	tb.Helper()
	if err := poll(timeout, interval, cond); err != nil {
		tb.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

var errNotYet = fmt.Errorf("not yet")

// poll returns nil as soon as cond does, or cond's last error once timeout
// has passed.
func poll(timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(min(interval, max(time.Until(deadline), 0)))
	}
}
