package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// ctx bounds the work of one request by RequestTimeout, and ends it with
// the client's request (reqctx.go: its timer only when someone waits).
func (s *Service) ctx(c echo.Context) (context.Context, context.CancelFunc) {
	return newRequestCtx(c.Request().Context(), s.timeout)
}

// pageLimit reads a listing's "limit" query parameter: def when absent,
// else an integer in [1, max].
func pageLimit(c echo.Context, def, max int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return def, nil
	}
	l, err := strconv.Atoi(v)
	if err != nil || l < 1 || l > max {
		return 0, badRequest(fmt.Sprintf(`query parameter "limit" must be between 1 and %d, got %q`, max, v))
	}
	return l, nil
}

// decodeBody decodes a JSON body strictly: unknown fields, trailing data and
// wrong types are 400s that name the problem, a body over api.MaxBodyBytes
// is a 413. With optional set, an empty body leaves v as it is.
func decodeBody(c echo.Context, v any, optional bool) error {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, api.MaxBodyBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		return bodyReadError(err)
	}
	return decodeJSONBody(data, v, optional)
}

// bodyReadError is the problem for a request body that could not be read.
func bodyReadError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return problem(http.StatusRequestEntityTooLarge, api.ProblemTooLarge, "body too large",
			fmt.Sprintf("request body exceeds %d bytes", api.MaxBodyBytes))
	}
	return badRequest("could not read the request body: " + err.Error())
}

// decodeJSONBody is decodeBody's decoding of a body already read.
func decodeJSONBody(data []byte, v any, optional bool) error {
	if len(data) == 0 {
		if optional {
			return nil
		}
		return badRequest("request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON body: " + describeJSONError(err))
	}
	// More() misses a stray '}' or ']'; only EOF means nothing follows.
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("malformed JSON body: data after the JSON object")
	}
	return nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, got %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Sprintf("body must be a JSON object, got %s", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%v (at byte %d)", syntaxErr, syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "body ends in the middle of a JSON value"
	}
	return err.Error()
}

func jsonKind(k string) string {
	switch k {
	case "int64", "int", "int32":
		return "an integer that fits a signed 64-bit value"
	case "string":
		return "a string"
	}
	return k
}
