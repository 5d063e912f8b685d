package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// leaderOnly runs the handler on the serving leader and forwards everywhere
// else.
func (s *Service) leaderOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		addr, err := s.forwardTo(c)
		switch {
		case err != nil:
			return err
		case addr == "":
			return next(c) // this node is the serving leader
		}
		// The proxy adds the leader's headers to these, never clears them.
		c.Response().Header().Set(api.LeaderHeader, addr)
		s.proxy(addr).ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

// forwardTo says where c is served: here ("", on the serving leader), or at
// the API address of the leader this node forwards it to (counted as
// forwarded); or the problem that says why neither can be.
func (s *Service) forwardTo(c echo.Context) (string, error) {
	if s.store.Serving() {
		return "", nil
	}
	if err := s.refuseOnStandby(); err != nil {
		return "", err
	}
	id, addr, ok := s.store.LeaderHTTPAddr()
	switch {
	case c.Request().Header.Get(ForwardedHeader) != "":
		return "", unavailable("this node was named leader by "+c.Request().Header.Get(ForwardedHeader)+" but is not serving as leader", id)
	case id == s.store.ID():
		return "", unavailable("this node was just elected leader and is not serving yet", id)
	case !ok:
		if id == "" {
			return "", unavailable("no leader is known", "")
		}
		return "", unavailable("the leader's API address is not known yet", id)
	}
	if s.metrics != nil {
		s.metrics.ForwardedRequests.Inc()
	}
	return addr, nil
}

func (s *Service) proxy(addr string) *httputil.ReverseProxy {
	s.proxyMu.Lock()
	defer s.proxyMu.Unlock()
	if p, ok := s.proxies[addr]; ok {
		return p
	}
	target := &url.URL{Scheme: s.scheme, Host: addr}
	self := s.store.ID()
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set(ForwardedHeader, self)
		},
		Transport:  s.transport,
		BufferPool: copyBuffers,
		// This node's answer already carries the request id (observe set
		// it, and the leader got the same one): the proxy would add the
		// leader's copy a second time.
		ModifyResponse: func(r *http.Response) error {
			r.Header.Del(RequestIDHeader)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeProblem(w, http.StatusServiceUnavailable, api.Problem{
				Type: api.ProblemUnavailable, Title: "leader unreachable",
				Detail: fmt.Sprintf("forwarding to the leader at %s failed: %v", addr, err),
			})
		},
	}
	s.proxies[addr] = p
	return p
}

// copyBuffers lends the proxy its copy buffers: without a pool it makes a
// 32 KiB one for every answer it relays.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// standbyStore is implemented by a store that can be a disaster-recovery
// standby (issue #34).
type standbyStore interface {
	// IsStandby reports whether this node is the cluster's standby (or
	// was started as one and has not joined yet).
	IsStandby() bool
}

// refuseOnStandby is the 503 a standby answers every request that would
// issue IDs: it serves none until promoted, and forwarding to a primary in
// another region would make the standby's region depend on it.
func (s *Service) refuseOnStandby() error {
	if sb, ok := s.store.(standbyStore); ok && sb.IsStandby() {
		return unavailable("this node is the cluster's disaster-recovery standby: it issues no IDs and forwards none until it is promoted (ticketd promote); send requests to the primary's nodes", "")
	}
	return nil
}
