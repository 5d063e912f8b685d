// Package resp reads and writes the Redis serialization protocol (RESP2 and
// RESP3) for ticketd's Redis-protocol front (package respapi).
//
// Only what a server needs is here: commands in (arrays of bulk strings, or
// inline lines as typed into telnet) and replies out. Every length a client
// sends is checked against a Limits before anything is allocated for it, so
// one connection never buffers more than Limits allows whatever it sends: a
// "$2147483647" header is a protocol error, not a 2 GiB allocation.
//
// Why not github.com/alicebob/miniredis/v2/server, the one RESP server
// library the module proxy serves: it reads a line with no bound and
// allocates whatever a bulk header asks for, flushes after every command and
// dispatches a connection's commands one at a time, so pipelined reservations
// could not share a leadership round. BenchmarkPipeline (respapi) compares
// the two on the same handler.
package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
)

// Limits bounds what one connection may send.
type Limits struct {
	// MaxArgs is the most arguments (the command name included) a command
	// may have.
	MaxArgs int
	// MaxBulk is the longest argument, in bytes.
	MaxBulk int
	// MaxCommand is the most bytes of arguments one command may carry.
	MaxCommand int
	// MaxInline is the longest inline command line (and the reader's
	// buffer, which bounds every header line too).
	MaxInline int
}

// DefaultLimits suit ticketd's commands, whose arguments are names of at
// most 64 bytes, numbers and tokens: far above what any of them needs, far
// below what would let a connection hold much memory. MaxInline is also the
// reader's buffer, which every connection holds while it is open.
var DefaultLimits = Limits{MaxArgs: 1024, MaxBulk: 64 << 10, MaxCommand: 256 << 10, MaxInline: 16 << 10}

// maxKeptArena is the most memory of arguments a reader keeps across Reset:
// a connection that once sent a large pipeline does not hold its memory
// while idle.
const maxKeptArena = 64 << 10

// ProtocolError is a malformed or oversized command. The connection cannot
// be read further: the server answers "-ERR Protocol error: ..." and closes
// it, as Redis does.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

func protoErr(format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...)}
}

// Reader reads commands from a connection.
type Reader struct {
	br     *bufio.Reader
	limits Limits
	arena  []byte // the arguments of the commands read since the last Reset
}

// NewReader returns a reader of r with the given limits (zero fields take
// DefaultLimits').
func NewReader(r io.Reader, l Limits) *Reader {
	if l.MaxArgs <= 0 {
		l.MaxArgs = DefaultLimits.MaxArgs
	}
	if l.MaxBulk <= 0 {
		l.MaxBulk = DefaultLimits.MaxBulk
	}
	if l.MaxCommand <= 0 {
		l.MaxCommand = DefaultLimits.MaxCommand
	}
	if l.MaxInline <= 0 {
		l.MaxInline = DefaultLimits.MaxInline
	}
	// bufio's buffer bounds a line: ReadSlice fails with ErrBufferFull
	// past it. The +2 leaves room for the CRLF of the longest line.
	return &Reader{br: bufio.NewReaderSize(r, l.MaxInline+2), limits: l}
}

// Buffered reports how many bytes have been received and not read yet: more
// than zero means a pipelined command is (at least partly) waiting.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Reset lets the reader reuse the memory of every argument returned so far:
// the caller is done with them.
func (r *Reader) Reset() {
	if cap(r.arena) > maxKeptArena {
		r.arena = nil
		return
	}
	r.arena = r.arena[:0]
}

// ReadCommand reads the next command and appends its arguments to args[:0].
// The arguments stay valid until Reset. An empty command (a blank inline
// line, "*0") is skipped. Errors are io errors (io.EOF at a clean end) or a
// *ProtocolError.
func (r *Reader) ReadCommand(args [][]byte) ([][]byte, error) {
	for {
		args = args[:0]
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, err
		}
		if b[0] == '*' {
			args, err = r.readArray(args)
		} else {
			args, err = r.readInline(args)
		}
		if err != nil || len(args) > 0 {
			return args, err
		}
	}
}

// line returns the next line without its CRLF (or bare LF, for inline
// commands typed by hand).
func (r *Reader) line() ([]byte, error) {
	l, err := r.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, protoErr("line longer than %d bytes", r.limits.MaxInline)
	case err == io.EOF && len(l) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	l = l[:len(l)-1]
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	// bufio's buffer is a little larger than MaxInline (and never below
	// 16 bytes), so the bound itself is checked here.
	if len(l) > r.limits.MaxInline {
		return nil, protoErr("line longer than %d bytes", r.limits.MaxInline)
	}
	return l, nil
}

func (r *Reader) readArray(args [][]byte) ([][]byte, error) {
	l, err := r.line()
	if err != nil {
		return nil, err
	}
	n, ok := parseLen(l[1:])
	switch {
	case !ok:
		return nil, protoErr("invalid multibulk length %q", clip(l))
	case n > int64(r.limits.MaxArgs):
		return nil, protoErr("command has %d arguments; at most %d are allowed", n, r.limits.MaxArgs)
	case n <= 0: // "*0" and "*-1": nothing to do, as in Redis
		return args, nil
	}
	total := 0
	for range n {
		h, err := r.line()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the array promised more
		}
		if err != nil {
			return nil, err
		}
		if len(h) == 0 || h[0] != '$' {
			return nil, protoErr("expected '$', got %q", clip(h))
		}
		size, ok := parseLen(h[1:])
		switch {
		case !ok || size < 0:
			return nil, protoErr("invalid bulk length %q", clip(h))
		case size > int64(r.limits.MaxBulk):
			return nil, protoErr("argument of %d bytes; at most %d are allowed", size, r.limits.MaxBulk)
		}
		total += int(size)
		if total > r.limits.MaxCommand {
			return nil, protoErr("command carries more than %d bytes of arguments", r.limits.MaxCommand)
		}
		start := len(r.arena)
		r.arena = append(r.arena, make([]byte, size+2)...)
		if _, err := io.ReadFull(r.br, r.arena[start:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if r.arena[len(r.arena)-2] != '\r' || r.arena[len(r.arena)-1] != '\n' {
			return nil, protoErr("bulk string of %d bytes not followed by CRLF", size)
		}
		r.arena = r.arena[:len(r.arena)-2]
		// Capped: an append to one argument can never spill into the next.
		args = append(args, r.arena[start:len(r.arena):len(r.arena)])
	}
	return args, nil
}

// readInline reads a command typed as one line of space-separated words
// (no quoting: ticketd's arguments are names and numbers).
func (r *Reader) readInline(args [][]byte) ([][]byte, error) {
	l, err := r.line()
	if err != nil {
		return nil, err
	}
	start := len(r.arena)
	r.arena = append(r.arena, l...)
	l = r.arena[start:]
	for i := 0; i < len(l); {
		for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
			i++
		}
		j := i
		for j < len(l) && l[j] != ' ' && l[j] != '\t' {
			j++
		}
		if j > i {
			if len(args) == r.limits.MaxArgs {
				return nil, protoErr("command has more than %d arguments", r.limits.MaxArgs)
			}
			args = append(args, l[i:j:j])
		}
		i = j
	}
	return args, nil
}

// parseLen parses a length header's number as Redis does: "-1", or a
// decimal of up to 18 digits without a sign or leading zeros (so that it
// cannot overflow).
func parseLen(b []byte) (int64, bool) {
	if len(b) == 2 && b[0] == '-' && b[1] == '1' {
		return -1, true
	}
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// clip shortens a bad header for an error message.
func clip(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}

// ParseInt parses an argument as Redis parses an integer: a decimal int64
// with an optional '-', and nothing else (no '+', spaces or leading zeros).
func ParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && (len(b) > 1 || neg)) {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits fit a uint64
	}
	switch {
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	case neg && n <= math.MaxInt64+1:
		return int64(-n), true
	}
	return 0, false
}
