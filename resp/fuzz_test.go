package resp_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/resp"
)

// fuzzLimits are small, so that the fuzzer reaches every bound.
var fuzzLimits = resp.Limits{MaxArgs: 8, MaxBulk: 64, MaxCommand: 256, MaxInline: 128}

// countingReader is a bytes.Reader that counts what the resp.Reader takes.
type countingReader struct {
	r          *bytes.Reader
	n          int // bytes returned
	emptyReads int // reads that returned no byte
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	if n == 0 {
		c.emptyReads++
	}
	return n, err
}

// FuzzReadCommand reads commands from arbitrary bytes until an error. It
// never panics or spins; every command respects the limits; the error is
// io.EOF, io.ErrUnexpectedEOF or a *resp.ProtocolError; the commands and
// the kind of error are those of refRead, a plain reading of the protocol
// over the whole input; and every argument returned is unchanged at the end
// (no Reset in between).
func FuzzReadCommand(f *testing.F) {
	for _, s := range []string{
		"*3\r\n$6\r\nINCRBY\r\n$6\r\norders\r\n$4\r\n1000\r\n",
		"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\nPING\r\nINCR  a\n",
		"*0\r\n\r\n*-1\r\n\n*2\r\n$0\r\n\r\n$4\r\na\r\nb\r\n",
		"PING\r\n", "INCR  orders\n", " \t x \r\n", "",
		// truncated
		"*1", "*1\r\n", "*1\r\n$4", "*1\r\n$4\r\n", "*1\r\n$4\r\nPI", "*1\r\n$4\r\nPING\r", "PING", "*2\r\n$3\r\nGET\r\n",
		// huge lengths
		"*1\r\n$1000000000\r\n", "*99999999999999999999\r\n", "*999999999999999999\r\n", "*9\r\n",
		"*1\r\n$65\r\n" + strings.Repeat("x", 65) + "\r\n",
		"*5\r\n$64\r\n" + strings.Repeat("x", 64) + "\r\n$64\r\n" + strings.Repeat("x", 64) + "\r\n$64\r\n" + strings.Repeat("x", 64) + "\r\n$64\r\n" + strings.Repeat("x", 64) + "\r\n$1\r\n",
		strings.Repeat("y", 128) + "\r\n" + strings.Repeat("y", 129) + "\n",
		strings.Repeat("a ", 9) + "\r\n",
		// nested arrays, negative and malformed lengths
		"*1\r\n*1\r\n$1\r\na\r\n", "*1\r\n$-1\r\n", "*-5\r\n", "*1\r\n$-0\r\n\r\n", "*1\r\n$01\r\na\r\n",
		"*01\r\n$1\r\na\r\n", "*00\r\n", "*-0\r\n", "*-2\r\n", "*-01\r\n", "*1\r\n$00\r\n\r\n", "*1\r\n$-2\r\n",
		"*1\r\n$-01\r\n", "*0\r\n*1\r\n$0\r\n\r\n", "*1\r\n$1\r\na\r\n*2\r\n$1\r\nb\r\n",
		"*+1\r\n", "* 1\r\n", "*x\r\n", "*1\r\n:1\r\n", "*1\r\n$1\r\nab\r\n", "*1\n$1\na\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &countingReader{r: bytes.NewReader(data)}
		r := resp.NewReader(src, fuzzLimits)
		var (
			got    [][][]byte // as returned
			copies [][]string // copied when returned
			err    error
		)
		for {
			var args [][]byte
			args, err = r.ReadCommand(nil)
			if err != nil {
				if args != nil {
					t.Fatalf("args %q returned with error %v", args, err)
				}
				break
			}
			checkCommand(t, args)
			got = append(got, args)
			c := make([]string, len(args))
			for i, a := range args {
				c[i] = string(a)
			}
			copies = append(copies, c)
			// The shortest command is two bytes ("a\n").
			if len(got) > len(data)/2 {
				t.Fatalf("%d commands out of %d bytes", len(got), len(data))
			}
		}
		var pe *resp.ProtocolError
		if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &pe) {
			t.Fatalf("error %v (%T), want io.EOF, io.ErrUnexpectedEOF or a *resp.ProtocolError", err, err)
		}
		if src.n > len(data) || src.emptyReads > 4 {
			t.Fatalf("read %d bytes of %d, %d empty reads", src.n, len(data), src.emptyReads)
		}
		if err == io.EOF && src.n != len(data) {
			t.Fatalf("io.EOF after reading %d bytes of %d", src.n, len(data))
		}
		for i, args := range got {
			if fmt.Sprintf("%q", args) != fmt.Sprintf("%q", copies[i]) {
				t.Fatalf("command %d changed before Reset: %q, was %q", i, args, copies[i])
			}
		}

		want := refRead(data, fuzzLimits)
		if fmt.Sprintf("%q", copies) != fmt.Sprintf("%q", want.cmds) {
			t.Fatalf("commands %q, want %q (reference: %s)", copies, want.cmds, want.err)
		}
		switch want.err {
		case "eof":
			if err != io.EOF {
				t.Fatalf("error %v, want io.EOF", err)
			}
		case "unexpected":
			if err != io.ErrUnexpectedEOF {
				t.Fatalf("error %v, want io.ErrUnexpectedEOF", err)
			}
		case "proto":
			if pe == nil {
				t.Fatalf("error %v, want a *resp.ProtocolError", err)
			}
		}
	})
}

// checkCommand checks a command against fuzzLimits: it came either from an
// array (each argument at most MaxBulk bytes, MaxCommand in all) or from an
// inline line (words of at most MaxInline bytes in all).
func checkCommand(t *testing.T, args [][]byte) {
	t.Helper()
	if len(args) == 0 || len(args) > fuzzLimits.MaxArgs {
		t.Fatalf("%d arguments %q, want 1..%d", len(args), args, fuzzLimits.MaxArgs)
	}
	array, inline := true, true
	total := 0
	for _, a := range args {
		total += len(a)
		if len(a) > fuzzLimits.MaxBulk {
			array = false
		}
		if len(a) == 0 || bytes.ContainsAny(a, " \t\n") {
			inline = false
		}
		if cap(a) != len(a) {
			t.Fatalf("argument %q has room to grow (cap %d) into the next one", a, cap(a))
		}
		checkParseInt(t, a)
	}
	if total > fuzzLimits.MaxCommand {
		array = false
	}
	if total+len(args)-1 > fuzzLimits.MaxInline {
		inline = false
	}
	if !array && !inline {
		t.Fatalf("command %q is over the limits both of an array and of an inline line", args)
	}
}

// checkParseInt checks that resp.ParseInt accepts exactly the canonical
// decimal int64s (what strconv.FormatInt writes), with their value.
func checkParseInt(t *testing.T, b []byte) {
	t.Helper()
	got, ok := resp.ParseInt(b)
	want, err := strconv.ParseInt(string(b), 10, 64)
	canonical := err == nil && strconv.FormatInt(want, 10) == string(b)
	if !canonical {
		want = 0 // what ParseInt returns with false
	}
	if ok != canonical || got != want {
		t.Fatalf("ParseInt(%q) = %d, %v; strconv.ParseInt = %d, %v (canonical %v)", b, got, ok, want, err, canonical)
	}
}

type refResult struct {
	cmds [][]string
	err  string // "eof", "unexpected" or "proto"
}

// refRead reads data as the protocol says, over the whole input at once: an
// independent model of Reader for FuzzReadCommand.
func refRead(data []byte, l resp.Limits) (res refResult) {
	pos := 0
	// The reader holds at most bufSize bytes of a line before giving up on
	// it (bufio never makes a buffer under 16 bytes).
	bufSize := max(l.MaxInline+2, 16)
	// line reads the line at pos without its LF or CRLF; status is "" or
	// an end of refResult.
	line := func() (content []byte, status string) {
		if pos == len(data) {
			return nil, "eof"
		}
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			// A line cut by the end of the input: refused once the
			// reader's buffer is full of it (no line of MaxInline bytes
			// and CRLF starts with that many bytes and no LF), cut short
			// before.
			if len(data)-pos >= bufSize {
				return nil, "proto"
			}
			return nil, "unexpected"
		}
		content = data[pos : pos+i]
		pos += i + 1
		if n := len(content); n > 0 && content[n-1] == '\r' {
			content = content[:n-1]
		}
		// Whatever the line ends with, and however small MaxInline is.
		if len(content) > l.MaxInline {
			return nil, "proto"
		}
		return content, ""
	}
	for {
		if pos == len(data) {
			res.err = "eof"
			return res
		}
		if data[pos] != '*' {
			l0, st := line()
			if st != "" {
				res.err = st
				return res
			}
			words := strings.FieldsFunc(string(l0), func(r rune) bool { return r == ' ' || r == '\t' })
			if len(words) > l.MaxArgs {
				res.err = "proto"
				return res
			}
			if len(words) > 0 {
				res.cmds = append(res.cmds, words)
			}
			continue
		}
		h, st := line()
		if st != "" {
			res.err = st
			return res
		}
		n, ok := refLen(h[1:])
		if !ok || n > int64(l.MaxArgs) {
			res.err = "proto"
			return res
		}
		var cmd []string
		total := 0
		for range n {
			bh, st := line()
			if st == "eof" {
				st = "unexpected" // the array promised more
			}
			if st != "" {
				res.err = st
				return res
			}
			if len(bh) == 0 || bh[0] != '$' {
				res.err = "proto"
				return res
			}
			size, ok := refLen(bh[1:])
			if !ok || size < 0 || size > int64(l.MaxBulk) {
				res.err = "proto"
				return res
			}
			if total += int(size); total > l.MaxCommand {
				res.err = "proto"
				return res
			}
			if len(data)-pos < int(size)+2 {
				res.err = "unexpected"
				return res
			}
			if string(data[pos+int(size):pos+int(size)+2]) != "\r\n" {
				res.err = "proto"
				return res
			}
			cmd = append(cmd, string(data[pos:pos+int(size)]))
			pos += int(size) + 2
		}
		if len(cmd) > 0 {
			res.cmds = append(res.cmds, cmd)
		}
	}
}

// refLen parses a length header's number as Redis writes one: -1, or a
// non-negative decimal of at most 18 digits written as strconv.FormatInt
// writes it (no sign, no leading zeros, no "-0").
func refLen(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != string(b) || n < -1 || len(b) > 18 {
		return 0, false
	}
	return n, true
}

// FuzzRoundTrip encodes up to three arguments as a RESP array by hand, and
// as an inline line when they can be one, reads them back with
// DefaultLimits and requires the same arguments, byte for byte. The hand
// encoding must be what AppendArray and AppendBulk write, and ParseInt must
// agree with strconv on every argument.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("INCRBY"), []byte("orders"), []byte("1000"), uint8(3))
	f.Add([]byte("GET"), []byte("a\r\nb"), []byte(""), uint8(2))
	f.Add([]byte("PING"), []byte(""), []byte(""), uint8(1))
	f.Add([]byte(""), []byte(""), []byte(""), uint8(0))
	f.Add([]byte("-9223372036854775808"), []byte("9223372036854775807"), []byte("-0"), uint8(7))
	f.Add([]byte("*1"), []byte("$1"), []byte("\r\n"), uint8(3))
	f.Add([]byte("01"), []byte("+1"), []byte("9223372036854775808"), uint8(3))
	f.Fuzz(func(t *testing.T, a, b, c []byte, n uint8) {
		args := [][]byte{a, b, c}[:n%4]
		for _, x := range args {
			checkParseInt(t, x)
		}

		enc := "*" + strconv.Itoa(len(args)) + "\r\n"
		total := 0
		for _, x := range args {
			enc += "$" + strconv.Itoa(len(x)) + "\r\n" + string(x) + "\r\n"
			total += len(x)
		}
		app := resp.AppendArray(nil, len(args))
		for _, x := range args {
			app = resp.AppendBulk(app, x)
		}
		if string(app) != enc {
			t.Fatalf("AppendArray+AppendBulk = %q, want %q", app, enc)
		}

		r := resp.NewReader(strings.NewReader(enc), resp.DefaultLimits)
		got, err := r.ReadCommand(nil)
		over := false
		for _, x := range args {
			over = over || len(x) > resp.DefaultLimits.MaxBulk
		}
		over = over || total > resp.DefaultLimits.MaxCommand
		var pe *resp.ProtocolError
		switch {
		case over:
			if !errors.As(err, &pe) {
				t.Fatalf("%d bytes of arguments: %v, want a ProtocolError", total, err)
			}
			return
		case len(args) == 0:
			if err != io.EOF {
				t.Fatalf("*0: %q, %v; want io.EOF", got, err)
			}
			return
		case err != nil:
			t.Fatal(err)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", args) {
			t.Fatalf("read %q, want %q", got, args)
		}
		if _, err := r.ReadCommand(nil); err != io.EOF {
			t.Fatalf("after the command: %v, want io.EOF", err)
		}

		// The same arguments typed as an inline line, when they can be.
		for _, x := range args {
			if len(x) == 0 || bytes.ContainsAny(x, " \t\n") {
				return
			}
		}
		line := bytes.Join(args, []byte(" "))
		if len(line) > resp.DefaultLimits.MaxInline || line[0] == '*' {
			return
		}
		r = resp.NewReader(bytes.NewReader(append(line, "\r\n"...)), resp.DefaultLimits)
		if got, err = r.ReadCommand(nil); err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", args) {
			t.Fatalf("inline %q: read %q, %v; want %q", line, got, err, args)
		}
	})
}
