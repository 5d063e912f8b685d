package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// Drain makes /readyz fail from now on, so load balancers stop sending
// traffic before the listener closes.
func (s *Service) Drain() { s.drainMu.Do(func() { close(s.draining) }) }

func (s *Service) livez(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "node": s.store.ID()})
}

func (s *Service) readyz(c echo.Context) error {
	select {
	case <-s.draining:
		return problem(http.StatusServiceUnavailable, api.ProblemUnavailable, "not ready", "node is shutting down")
	default:
	}
	if err := s.store.Ready(); err != nil {
		return problem(http.StatusServiceUnavailable, api.ProblemUnavailable, "not ready", err.Error())
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready", "node": s.store.ID()})
}
