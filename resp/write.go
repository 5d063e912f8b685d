package resp

import (
	"strconv"
	"strings"
)

// Replies are appended to a byte slice, so that a server can build the
// answer of a command while earlier commands of the same pipeline are still
// running and write them all in order. Proto is the connection's protocol
// version, 2 or 3 (HELLO switches it); the few types that differ between
// the two (null, map) take it.

// AppendSimple appends a simple string ("+OK").
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = appendLine(b, s)
	return append(b, '\r', '\n')
}

// AppendError appends an error. msg starts with its code, upper case, as
// Redis errors do ("ERR ...", "NOAUTH ...").
func AppendError(b []byte, msg string) []byte {
	b = append(b, '-')
	b = appendLine(b, msg)
	return append(b, '\r', '\n')
}

// appendLine appends s with CR and LF replaced by spaces: a simple string
// or error is one line.
func appendLine(b []byte, s string) []byte {
	if !strings.ContainsAny(s, "\r\n") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// AppendInt appends an integer.
func AppendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends a bulk string.
func AppendBulk(b []byte, s []byte) []byte { return appendBulk(b, s) }

// AppendBulkString is AppendBulk of a string.
func AppendBulkString(b []byte, s string) []byte { return appendBulk(b, s) }

func appendBulk[T string | []byte](b []byte, s T) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkInt appends n as a bulk string, as Redis answers GET of a
// counter.
func AppendBulkInt(b []byte, n int64) []byte {
	var digits [20]byte
	return AppendBulk(b, strconv.AppendInt(digits[:0], n, 10))
}

// AppendNull appends the null reply: "$-1" in RESP2, "_" in RESP3.
func AppendNull(b []byte, proto int) []byte {
	if proto >= 3 {
		return append(b, '_', '\r', '\n')
	}
	return append(b, "$-1\r\n"...)
}

// AppendArray appends the header of an array of n elements.
func AppendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendMap appends the header of a map of n pairs: a RESP3 map, or in
// RESP2 an array of 2n elements (key, value, ...).
func AppendMap(b []byte, n int, proto int) []byte {
	if proto >= 3 {
		b = append(b, '%')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return AppendArray(b, 2*n)
}
