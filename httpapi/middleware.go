package httpapi

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
)

// RequestIDHeader carries a request's id; a forwarded request keeps the id
// it arrived with, so the follower's and the leader's log lines match.
const RequestIDHeader = "X-Request-Id"

// observe gives every request an id, counts it by route and status, and logs
// it. Successful requests are logged at debug level: at tens of thousands of
// requests per second an info line each would cost more than the request.
func (s *Service) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		id := req.Header.Get(RequestIDHeader)
		if id == "" || len(id) > 64 {
			id = newRequestID()
			req.Header.Set(RequestIDHeader, id)
		}
		c.Response().Header().Set(RequestIDHeader, id)
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		s.metrics.ObserveHTTP(route, req.Method, status)
		level := slog.LevelDebug
		if status >= 500 && status != http.StatusServiceUnavailable {
			level = slog.LevelWarn
		}
		if s.log.Enabled(req.Context(), level) {
			s.log.Log(req.Context(), level, "request",
				"request_id", id, "method", req.Method, "path", req.URL.Path, "status", status,
				"duration", time.Since(start), "remote", req.RemoteAddr,
				"forwarded_by", req.Header.Get(ForwardedHeader))
		}
		return nil
	}
}

// decodeParams percent-decodes the path parameters. Echo matches a route
// against the request's RawPath when it has one (Go keeps RawPath only when
// the client escaped the path otherwise than Go would: "%2D" for '-', or
// url.PathEscape's "%3B" for ';') and then hands the parameters out still
// escaped; matched against Path they come decoded. Without this a handler
// saw "n%31" for /v1/cluster/members/n%31 but "no body" for
// /v1/cluster/members/no%20body, and a member whose id the SDK escapes could
// never be removed. RFC 3986 makes both spellings the same URI.
//
// "%2E" and "%2E%2E" decode to "." and "..": the only way a client that
// resolves dot segments (curl, most proxies) can reach a sequence or
// namespace of that name, which earlier releases let be created (api.
// ValidateNewSequenceName now refuses it). A client that sent the dots as
// they are reaches the same sequence, so both spellings name one thing.
func decodeParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().URL.RawPath != "" {
			vals := c.ParamValues()
			for i, v := range vals {
				if d, err := url.PathUnescape(v); err == nil {
					vals[i] = d
				}
			}
			c.SetParamValues(vals...)
		}
		return next(c)
	}
}

// limitInflight answers 429 when more than max requests are in progress, so
// an overload sheds work instead of queueing it until every request times
// out.
func (s *Service) limitInflight(max int) echo.MiddlewareFunc {
	sem := make(chan struct{}, max)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				return next(c)
			default:
				if s.metrics != nil {
					s.metrics.InflightRejected.Inc()
				}
				c.Response().Header().Set("Retry-After", "1")
				return problem(http.StatusTooManyRequests, api.ProblemTooManyRequests, "too many requests",
					"more than "+strconv.Itoa(max)+" requests are in progress on this node; retry later")
			}
		}
	}
}

// require returns middleware that lets a request through only with a bearer
// token granting scope. With no tokens configured (dev mode) it lets
// everything through.
func (s *Service) require(scope auth.Scope) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if s.tokens == nil {
			return next
		}
		return func(c echo.Context) error {
			token, ok := bearerToken(c.Request())
			if !ok {
				return s.unauthorized(c, "missing bearer token: send \"Authorization: Bearer <token>\"")
			}
			found, allowed := s.tokens.Check(token, scope)
			switch {
			case !found:
				return s.unauthorized(c, "the bearer token is not valid")
			case !allowed:
				if s.metrics != nil {
					s.metrics.AuthFailures.WithLabelValues("403").Inc()
				}
				return problem(http.StatusForbidden, api.ProblemForbidden, "forbidden",
					"the token lacks the \""+string(scope)+"\" scope this request needs")
			}
			return next(c)
		}
	}
}

func (s *Service) unauthorized(c echo.Context, detail string) error {
	if s.metrics != nil {
		s.metrics.AuthFailures.WithLabelValues("401").Inc()
	}
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ticketd"`)
	return problem(http.StatusUnauthorized, api.ProblemUnauthorized, "unauthorized", detail)
}

func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}
