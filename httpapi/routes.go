package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// composedGroup registers routes on an echo.Group with each route's
// middleware composed once, when the route is registered. Echo v4 composes a
// route's middleware anew on every request (echo.add wraps the handler in a
// closure that calls applyMiddleware each time): one closure allocated per
// middleware per request, on every reservation. The chain built here is the
// one Echo builds (the last middleware innermost, as applyMiddleware does),
// and every middleware of this package only captures its arguments when
// applied (require looks at s.tokens, which New sets before any route), so
// requests see the same chain. Only the route's Name in e.Routes(), which
// nothing here uses, now names the outermost middleware.
type composedGroup struct{ g *echo.Group }

func (g composedGroup) add(method, path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return g.g.Add(method, path, h)
}

func (g composedGroup) GET(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return g.add(http.MethodGet, path, h, mw...)
}

func (g composedGroup) POST(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return g.add(http.MethodPost, path, h, mw...)
}

func (g composedGroup) PUT(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return g.add(http.MethodPut, path, h, mw...)
}

func (g composedGroup) DELETE(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return g.add(http.MethodDelete, path, h, mw...)
}
