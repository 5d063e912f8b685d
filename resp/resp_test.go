package resp_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/resp"
)

// small are limits small enough to reach every bound with short inputs.
var small = resp.Limits{MaxArgs: 4, MaxBulk: 16, MaxCommand: 40, MaxInline: 32}

// readAll reads commands from in until an error and returns them (copied)
// with that error.
func readAll(t *testing.T, in string, l resp.Limits) ([][]string, error) {
	t.Helper()
	r := resp.NewReader(strings.NewReader(in), l)
	var cmds [][]string
	for i := 0; ; i++ {
		if i > len(in)+1 {
			t.Fatalf("%q: more commands than bytes", in)
		}
		args, err := r.ReadCommand(nil)
		if err != nil {
			if args != nil {
				t.Errorf("%q: ReadCommand returned args %q with error %v", in, args, err)
			}
			return cmds, err
		}
		cmd := make([]string, len(args))
		for j, a := range args {
			cmd[j] = string(a)
		}
		cmds = append(cmds, cmd)
	}
}

func cmdsString(c [][]string) string { return fmt.Sprintf("%q", c) }

func TestReadCommandValid(t *testing.T) {
	bigBulk := strings.Repeat("x", small.MaxBulk)
	for _, tc := range []struct {
		name string
		in   string
		l    resp.Limits
		want [][]string
	}{
		{"array", "*3\r\n$6\r\nINCRBY\r\n$6\r\norders\r\n$4\r\n1000\r\n", resp.DefaultLimits,
			[][]string{{"INCRBY", "orders", "1000"}}},
		{"pipelined arrays", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", resp.DefaultLimits,
			[][]string{{"PING"}, {"INCR", "a"}, {"SET", "k", "v"}}},
		{"inline CRLF", "PING\r\n", resp.DefaultLimits, [][]string{{"PING"}}},
		{"inline extra spaces", "INCR  orders\n", resp.DefaultLimits, [][]string{{"INCR", "orders"}}},
		{"inline leading and trailing blanks, tabs", " \tINCRBY\t orders   7 \t\r\n", resp.DefaultLimits, [][]string{{"INCRBY", "orders", "7"}}},
		{"inline bare LF pipelined", "PING\nECHO a\nGET b\r\n", resp.DefaultLimits, [][]string{{"PING"}, {"ECHO", "a"}, {"GET", "b"}}},
		{"inline then array then inline", "PING\r\n*1\r\n$4\r\nQUIT\r\nTIME\n", resp.DefaultLimits, [][]string{{"PING"}, {"QUIT"}, {"TIME"}}},
		{"empty commands skipped", "*0\r\n\r\n*-1\r\n\n   \r\n\t\n*1\r\n$4\r\nPING\r\n*0\r\n", resp.DefaultLimits, [][]string{{"PING"}}},
		{"only empty commands", "*0\r\n\r\n*-1\r\n", resp.DefaultLimits, nil},
		{"nothing", "", resp.DefaultLimits, nil},
		{"empty bulk", "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", resp.DefaultLimits, [][]string{{"GET", ""}}},
		{"binary bulk", "*2\r\n$4\r\nECHO\r\n$8\r\na\r\nb\x00\xff\n\r\r\n", resp.DefaultLimits, [][]string{{"ECHO", "a\r\nb\x00\xff\n\r"}}},
		{"bulk that looks like a header", "*1\r\n$4\r\n*1\r\n\r\n", resp.DefaultLimits, [][]string{{"*1\r\n"}}},
		{"MaxArgs args", "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n", small, [][]string{{"a", "b", "c", "d"}}},
		{"MaxArgs inline args", "a b c d\r\n", small, [][]string{{"a", "b", "c", "d"}}},
		{"MaxBulk arg", "*1\r\n$16\r\n" + bigBulk + "\r\n", small, [][]string{{bigBulk}}},
		{"MaxCommand bytes", "*3\r\n$16\r\n" + bigBulk + "\r\n$16\r\n" + bigBulk + "\r\n$8\r\n12345678\r\n", small,
			[][]string{{bigBulk, bigBulk, "12345678"}}},
		{"MaxInline line (CRLF)", strings.Repeat("y", small.MaxInline) + "\r\n", small, [][]string{{strings.Repeat("y", small.MaxInline)}}},
		{"MaxInline line (bare LF)", strings.Repeat("y", small.MaxInline) + "\n", small, [][]string{{strings.Repeat("y", small.MaxInline)}}},
		{"MaxInline 4, lines of 4", "PING\r\nA  B\n*1\r\n$4\r\nPONG\r\n", resp.Limits{MaxInline: 4}, [][]string{{"PING"}, {"A", "B"}, {"PONG"}}},
		{"zero lengths", "*0\r\n*1\r\n$0\r\n\r\n*10\r\n$10\r\n0123456789\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n$0\r\n\r\n", resp.DefaultLimits,
			[][]string{{""}, {"0123456789", "", "", "", "", "", "", "", "", ""}}},
		{"zero limits take the defaults", "*1\r\n$65536\r\n" + strings.Repeat("z", 65536) + "\r\n", resp.Limits{},
			[][]string{{strings.Repeat("z", 65536)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, tc.in, tc.l)
			if err != io.EOF {
				t.Fatalf("error after %d commands = %v, want io.EOF", len(got), err)
			}
			if cmdsString(got) != cmdsString(tc.want) {
				t.Fatalf("commands = %s, want %s", cmdsString(got), cmdsString(tc.want))
			}
		})
	}
}

func TestReadCommandProtocolErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		l    resp.Limits
		msg  string // a substring of ProtocolError.Msg
		ok   int    // commands read before the error
	}{
		{"multibulk x", "*x\r\n", resp.DefaultLimits, `invalid multibulk length "*x"`, 0},
		{"multibulk plus", "*+1\r\n$1\r\na\r\n", resp.DefaultLimits, `invalid multibulk length "*+1"`, 0},
		{"multibulk space", "* 1\r\n$1\r\na\r\n", resp.DefaultLimits, `invalid multibulk length "* 1"`, 0},
		{"multibulk trailing space", "*1 \r\n$1\r\na\r\n", resp.DefaultLimits, `invalid multibulk length`, 0},
		{"multibulk empty", "*\r\n", resp.DefaultLimits, `invalid multibulk length "*"`, 0},
		{"multibulk minus only", "*-\r\n", resp.DefaultLimits, `invalid multibulk length "*-"`, 0},
		{"multibulk leading zero", "*01\r\n$1\r\na\r\n", resp.DefaultLimits, `invalid multibulk length "*01"`, 0},
		{"multibulk 00", "*00\r\n", resp.DefaultLimits, `invalid multibulk length "*00"`, 0},
		{"multibulk minus zero", "*-0\r\n", resp.DefaultLimits, `invalid multibulk length "*-0"`, 0},
		{"multibulk minus two", "*-2\r\n", resp.DefaultLimits, `invalid multibulk length "*-2"`, 0},
		{"multibulk minus five", "*-5\r\n", resp.DefaultLimits, `invalid multibulk length "*-5"`, 0},
		{"multibulk minus 01", "*-01\r\n", resp.DefaultLimits, `invalid multibulk length "*-01"`, 0},
		{"multibulk 20 digits", "*99999999999999999999\r\n", resp.DefaultLimits, `invalid multibulk length "*99999999999999999999"`, 0},
		{"multibulk after a good command", "PING\r\n*1\r\n$4\r\nPING\r\n*y\r\n", resp.DefaultLimits, `invalid multibulk length "*y"`, 2},
		{"too many args", "*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n", small, "command has 5 arguments; at most 4 are allowed", 0},
		{"too many args, header only", "*1025\r\n", resp.Limits{}, "command has 1025 arguments; at most 1024 are allowed", 0},
		{"too many args, 18 digits", "*999999999999999999\r\n", resp.DefaultLimits, "command has 999999999999999999 arguments", 0},
		{"too many inline args", "a b c d e\r\n", small, "command has more than 4 arguments", 0},
		{"bulk without $", "*1\r\n:1\r\n", resp.DefaultLimits, `expected '$', got ":1"`, 0},
		{"nested array", "*1\r\n*1\r\n$1\r\na\r\n", resp.DefaultLimits, `expected '$', got "*1"`, 0},
		{"empty bulk header", "*1\r\n\r\n", resp.DefaultLimits, `expected '$', got ""`, 0},
		{"inline word in array", "*2\r\n$3\r\nGET\r\nkey\r\n", resp.DefaultLimits, `expected '$', got "key"`, 0},
		{"negative bulk", "*2\r\n$3\r\nGET\r\n$-1\r\n", resp.DefaultLimits, `invalid bulk length "$-1"`, 0},
		{"bulk leading zero", "*1\r\n$01\r\na\r\n", resp.DefaultLimits, `invalid bulk length "$01"`, 0},
		{"bulk 00", "*1\r\n$00\r\n\r\n", resp.DefaultLimits, `invalid bulk length "$00"`, 0},
		{"bulk minus zero", "*1\r\n$-0\r\n\r\n", resp.DefaultLimits, `invalid bulk length "$-0"`, 0},
		{"bulk minus two", "*1\r\n$-2\r\n", resp.DefaultLimits, `invalid bulk length "$-2"`, 0},
		{"bulk x", "*1\r\n$x\r\n", resp.DefaultLimits, `invalid bulk length "$x"`, 0},
		{"bulk plus", "*1\r\n$+1\r\na\r\n", resp.DefaultLimits, `invalid bulk length "$+1"`, 0},
		{"bulk empty length", "*1\r\n$\r\n", resp.DefaultLimits, `invalid bulk length "$"`, 0},
		{"bulk 19 digits", "*1\r\n$1000000000000000000\r\n", resp.DefaultLimits, `invalid bulk length`, 0},
		{"bulk over MaxBulk", "*1\r\n$17\r\n" + strings.Repeat("x", 17) + "\r\n", small, "argument of 17 bytes; at most 16 are allowed", 0},
		{"bulk over default MaxBulk", "*1\r\n$65537\r\n" + strings.Repeat("x", 65537) + "\r\n", resp.Limits{}, "argument of 65537 bytes; at most 65536 are allowed", 0},
		{"bulk header only, huge", "*1\r\n$1000000000\r\n", resp.DefaultLimits, "argument of 1000000000 bytes", 0},
		{"over MaxCommand", "*3\r\n$16\r\n" + strings.Repeat("x", 16) + "\r\n$16\r\n" + strings.Repeat("x", 16) + "\r\n$9\r\n123456789\r\n", small,
			"command carries more than 40 bytes of arguments", 0},
		{"over MaxCommand, header only", "*3\r\n$16\r\n" + strings.Repeat("x", 16) + "\r\n$16\r\n" + strings.Repeat("x", 16) + "\r\n$9\r\n", small,
			"command carries more than 40 bytes of arguments", 0},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGXX", resp.DefaultLimits, "bulk string of 4 bytes not followed by CRLF", 0},
		{"bulk with LF, no CR", "*1\r\n$4\r\nPINGX\n", resp.DefaultLimits, "bulk string of 4 bytes not followed by CRLF", 0},
		{"bulk with CR, no LF", "*1\r\n$4\r\nPING\rX", resp.DefaultLimits, "bulk string of 4 bytes not followed by CRLF", 0},
		{"bulk with LF only", "*2\r\n$4\r\nPING\n$1\r\na\r\n", resp.DefaultLimits, "bulk string of 4 bytes not followed by CRLF", 0},
		{"bulk longer than said", "*1\r\n$3\r\nPING\r\n", resp.DefaultLimits, "bulk string of 3 bytes not followed by CRLF", 0},
		{"inline over MaxInline (CRLF)", strings.Repeat("y", small.MaxInline+1) + "\r\n", small, "line longer than 32 bytes", 0},
		{"inline over MaxInline (bare LF)", strings.Repeat("y", small.MaxInline+1) + "\n", small, "line longer than 32 bytes", 0},
		{"inline over MaxInline (bare LF) after a good line", "PING\n" + strings.Repeat("y", small.MaxInline+1) + "\nPING\n", small, "line longer than 32 bytes", 1},
		{"inline over MaxInline, no end", strings.Repeat("y", 1000), small, "line longer than 32 bytes", 0},
		{"header over MaxInline", "*1" + strings.Repeat("0", 40) + "\r\n", small, "line longer than 32 bytes", 0},
		{"inline over small MaxInline", "PING PONG\r\n", resp.Limits{MaxInline: 4}, "line longer than 4 bytes", 0},
		{"inline over small MaxInline (bare LF)", "PINGS\n", resp.Limits{MaxInline: 4}, "line longer than 4 bytes", 0},
		{"header over small MaxInline", "*1\r\n$10000\r\n", resp.Limits{MaxInline: 4}, "line longer than 4 bytes", 0},
		{"inline over default MaxInline (bare LF)", strings.Repeat("y", 16385) + "\n", resp.Limits{}, "line longer than 16384 bytes", 0},
		{"inline over default MaxInline", strings.Repeat("y ", 10000) + "\r\n", resp.Limits{MaxArgs: 1 << 20}, "line longer than 16384 bytes", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, tc.in, tc.l)
			var pe *resp.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v (%T) after %s, want a *resp.ProtocolError", err, err, cmdsString(got))
			}
			if !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("Msg = %q, want it to contain %q", pe.Msg, tc.msg)
			}
			if want := "Protocol error: " + pe.Msg; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
			if len(got) != tc.ok {
				t.Errorf("read %s before the error, want %d commands", cmdsString(got), tc.ok)
			}
		})
	}
}

// A line of MaxInline+1 bytes is one byte too long whether it ends in CRLF
// or in a bare LF, and MaxInline bounds a line however small it is (bufio
// never makes a buffer under 16 bytes).
func TestReadCommandLineOverMaxInline(t *testing.T) {
	for _, maxInline := range []int{1, 4, 13, 14, 15, 32, 100} {
		l := resp.Limits{MaxInline: maxInline}
		for _, end := range []string{"\n", "\r\n"} {
			ok := strings.Repeat("y", maxInline)
			got, err := readAll(t, ok+end, l)
			if err != io.EOF || cmdsString(got) != cmdsString([][]string{{ok}}) {
				t.Errorf("MaxInline %d, %q: got %s, %v; want the line", maxInline, ok+end, cmdsString(got), err)
			}
			over := ok + "y"
			got, err = readAll(t, over+end, l)
			var pe *resp.ProtocolError
			if len(got) != 0 || !errors.As(err, &pe) || pe.Msg != fmt.Sprintf("line longer than %d bytes", maxInline) {
				t.Errorf("MaxInline %d, %q: got %s, %v; want a ProtocolError naming the line length", maxInline, over+end, cmdsString(got), err)
			}
		}
	}
}

// blockingReader serves its data then blocks, like a connection whose
// client sent a header and nothing more.
type blockingReader struct {
	data  []byte
	block chan struct{}
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		<-b.block
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// A bulk or command over its limit is refused on its header: the reader
// neither waits for the body nor allocates it.
func TestReadCommandRefusesOnHeader(t *testing.T) {
	// How long to wait: a refusal must come without the body, so a timeout
	// is a failure; a command within limits waits for its body (the case
	// whose msg is ""), and 200 ms of silence is enough to tell.
	wait := func(msg string) time.Duration {
		if msg == "" {
			return 200 * time.Millisecond
		}
		return 5 * time.Second
	}
	for _, tc := range []struct {
		in  string
		msg string
	}{
		{"*1\r\n$1000000000\r\n", "argument of 1000000000 bytes"},
		{"*1\r\n$65537\r\n", "argument of 65537 bytes"},
		{"*3\r\n$65536\r\n" + strings.Repeat("a", 65536) + "\r\n$65536\r\n" + strings.Repeat("a", 65536) + "\r\n$65536\r\n" + strings.Repeat("a", 65536) + "\r\n*1\r\n$1\r\n", ""},
		{"*5\r\n$65536\r\n" + strings.Repeat("a", 65536) + "\r\n$65536\r\n" + strings.Repeat("a", 65536) + "\r\n$65536\r\n" + strings.Repeat("a", 65536) + "\r\n$65536\r\n" + strings.Repeat("a", 65536) + "\r\n$1\r\n",
			"command carries more than 262144 bytes"},
		{"*2000\r\n", "command has 2000 arguments"},
	} {
		br := &blockingReader{data: []byte(tc.in), block: make(chan struct{})}
		r := resp.NewReader(br, resp.DefaultLimits)
		type result struct {
			args [][]byte
			err  error
		}
		done := make(chan result, 1)
		go func() {
			var res result
			for res.err == nil {
				res.args, res.err = r.ReadCommand(nil)
			}
			done <- res
		}()
		select {
		case res := <-done:
			var pe *resp.ProtocolError
			if tc.msg == "" {
				t.Errorf("%.40q: %v, want the reader to wait for the rest", tc.in, res.err)
			} else if !errors.As(res.err, &pe) || !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("%.40q: %v, want a ProtocolError containing %q", tc.in, res.err, tc.msg)
			}
		case <-time.After(wait(tc.msg)):
			if tc.msg != "" {
				t.Errorf("%.40q: still reading after 5 s, want a ProtocolError on the header", tc.in)
			}
		}
		close(br.block)
		if tc.msg == "" {
			<-done
		}
	}
}

func TestReadCommandTruncated(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok int
	}{
		{"*1", 0},
		{"*1\r", 0},
		{"*1\r\n$4", 0},
		{"*1\r\n$4\r", 0},
		{"*1\r\n$4\r\n", 0},
		{"*1\r\n$4\r\nPI", 0},
		{"*1\r\n$4\r\nPING", 0},
		{"*1\r\n$4\r\nPING\r", 0},
		{"*1\r\n$0\r\n", 0},
		{"*1\r\n$0\r\n\r", 0},
		{"PING", 0},
		{"PING\r", 0},
		{"PING\r\nPING", 1},
		{"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk", 1},
		{"*1\r\n", 0},
		{"*2\r\n$3\r\nGET\r\n", 0},
		{"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n", 1},
	} {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			got, err := readAll(t, tc.in, resp.DefaultLimits)
			if len(got) != tc.ok {
				t.Errorf("read %s before the error, want %d commands", cmdsString(got), tc.ok)
			}
			if err != io.ErrUnexpectedEOF {
				t.Fatalf("error = %v, want io.ErrUnexpectedEOF", err)
			}
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// An error of the connection other than EOF comes back as it is.
func TestReadCommandConnError(t *testing.T) {
	boom := errors.New("boom")
	r := resp.NewReader(io.MultiReader(strings.NewReader("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI"), errReader{boom}), resp.DefaultLimits)
	args, err := r.ReadCommand(nil)
	if err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("first command: %q, %v", args, err)
	}
	if _, err := r.ReadCommand(nil); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want %v", err, boom)
	}
}

// The arguments returned stay valid, and unchanged, across later
// ReadCommand calls until Reset, however the reader's buffers move.
func TestReadCommandArgsValidUntilReset(t *testing.T) {
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	want := [][]string{
		{"SET", long('a', 16), long('b', 16)},
		{"INLINE", long('c', 10), long('d', 10)},
		{"\r\n", long('e', 16), "", long('f', 7)},
	}
	var in strings.Builder
	for i, cmd := range want {
		if i == 1 {
			in.WriteString(strings.Join(cmd, " ") + "\r\n")
			continue
		}
		in.WriteString("*" + strconv.Itoa(len(cmd)) + "\r\n")
		for _, a := range cmd {
			fmt.Fprintf(&in, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	l := resp.Limits{MaxArgs: 4, MaxBulk: 16, MaxCommand: 64, MaxInline: 40}
	// A reader that returns a few bytes at a time, so that the buffer of
	// the bufio.Reader is refilled (and overwritten) between commands.
	r := resp.NewReader(&chunkReader{data: []byte(in.String()), n: 5}, l)
	var kept [][][]byte
	for range want {
		args, err := r.ReadCommand(nil)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, args)
	}
	if _, err := r.ReadCommand(nil); err != io.EOF {
		t.Fatalf("after the three commands: %v, want io.EOF", err)
	}
	for i, args := range kept {
		if got := fmt.Sprintf("%q", args); got != fmt.Sprintf("%q", want[i]) {
			t.Errorf("command %d = %s, want %q", i, got, want[i])
		}
	}
	// An append to one argument does not spill into the next.
	_ = append(kept[0][1], "XXXX"...)
	_ = append(kept[1][1], "XXXX"...)
	if string(kept[0][2]) != want[0][2] || string(kept[1][2]) != want[1][2] {
		t.Errorf("an append to an argument changed the next one: %q, %q", kept[0][2], kept[1][2])
	}

	// After Reset the reader reads on, into reused memory.
	r.Reset()
	r2 := resp.NewReader(strings.NewReader(in.String()), l)
	var args [][]byte
	for i := range want {
		var err error
		if args, err = r2.ReadCommand(args); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%q", args); got != fmt.Sprintf("%q", want[i]) {
			t.Errorf("command %d (args slice reused) = %s, want %q", i, got, want[i])
		}
		r2.Reset()
	}
}

type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.n, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestBuffered(t *testing.T) {
	in := "*1\r\n$4\r\nPING\r\nPING\r\n"
	r := resp.NewReader(strings.NewReader(in), resp.DefaultLimits)
	if n := r.Buffered(); n != 0 {
		t.Fatalf("Buffered before any read = %d", n)
	}
	if _, err := r.ReadCommand(nil); err != nil {
		t.Fatal(err)
	}
	if n := r.Buffered(); n != len("PING\r\n") {
		t.Errorf("Buffered after the first command = %d, want %d", n, len("PING\r\n"))
	}
	if _, err := r.ReadCommand(nil); err != nil {
		t.Fatal(err)
	}
	if n := r.Buffered(); n != 0 {
		t.Errorf("Buffered after the last command = %d, want 0", n)
	}
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"1000", 1000, true},
		{"-1000", -1000, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775806", math.MaxInt64 - 1, true},
		{"-9223372036854775807", math.MinInt64 + 1, true},
		{"1000000000000000000", 1e18, true},
		{"", 0, false},
		{"-", 0, false},
		{"+1", 0, false},
		{"01", 0, false},
		{"00", 0, false},
		{"-0", 0, false},
		{"-01", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1\r\n", 0, false},
		{"--1", 0, false},
		{"1-", 0, false},
		{"1_000", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"9999999999999999999", 0, false},
		{"-9999999999999999999", 0, false},
		{"12a", 0, false},
		{"a12", 0, false},
		{"12345678901234567890", 0, false},
		{"-12345678901234567890", 0, false},
		{"18446744073709551616", 0, false}, // 2^64: would wrap a uint64
		{"99999999999999999999", 0, false},
		{"00000000000000000001", 0, false},
	} {
		got, ok := resp.ParseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAppendLines(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{string(resp.AppendSimple(nil, "OK")), "+OK\r\n"},
		{string(resp.AppendSimple(nil, "")), "+\r\n"},
		{string(resp.AppendSimple([]byte("x"), "a\r\nb\nc\rd")), "x+a  b c d\r\n"},
		{string(resp.AppendError(nil, "ERR unknown command")), "-ERR unknown command\r\n"},
		{string(resp.AppendError([]byte(":1\r\n"), "ERR bad\r\n+OK")), ":1\r\n-ERR bad  +OK\r\n"},
		{string(resp.AppendError(nil, "\n")), "- \r\n"},
		{string(resp.AppendInt(nil, 0)), ":0\r\n"},
		{string(resp.AppendInt(nil, -42)), ":-42\r\n"},
		{string(resp.AppendInt(nil, math.MaxInt64)), ":9223372036854775807\r\n"},
		{string(resp.AppendInt([]byte("+OK\r\n"), math.MinInt64)), "+OK\r\n:-9223372036854775808\r\n"},
		{string(resp.AppendBulk(nil, []byte("hello"))), "$5\r\nhello\r\n"},
		{string(resp.AppendBulk(nil, nil)), "$0\r\n\r\n"},
		{string(resp.AppendBulk([]byte("*2\r\n"), []byte("a\r\nb\x00"))), "*2\r\n$5\r\na\r\nb\x00\r\n"},
		{string(resp.AppendBulkString(nil, "orders")), "$6\r\norders\r\n"},
		{string(resp.AppendBulkString(nil, "")), "$0\r\n\r\n"},
		{string(resp.AppendBulkString([]byte("_"), "\r\n")), "_$2\r\n\r\n\r\n"},
		{string(resp.AppendBulkInt(nil, 0)), "$1\r\n0\r\n"},
		{string(resp.AppendBulkInt(nil, 1000)), "$4\r\n1000\r\n"},
		{string(resp.AppendBulkInt(nil, -7)), "$2\r\n-7\r\n"},
		{string(resp.AppendBulkInt(nil, math.MinInt64)), "$20\r\n-9223372036854775808\r\n"},
		{string(resp.AppendBulkInt(nil, math.MaxInt64)), "$19\r\n9223372036854775807\r\n"},
		{string(resp.AppendNull(nil, 2)), "$-1\r\n"},
		{string(resp.AppendNull(nil, 3)), "_\r\n"},
		{string(resp.AppendNull([]byte("+OK\r\n"), 2)), "+OK\r\n$-1\r\n"},
		{string(resp.AppendArray(nil, 0)), "*0\r\n"},
		{string(resp.AppendArray(nil, 3)), "*3\r\n"},
		{string(resp.AppendArray(nil, 1024)), "*1024\r\n"},
		{string(resp.AppendMap(nil, 2, 2)), "*4\r\n"},
		{string(resp.AppendMap(nil, 0, 2)), "*0\r\n"},
		{string(resp.AppendMap(nil, 2, 3)), "%2\r\n"},
		{string(resp.AppendMap(nil, 10, 3)), "%10\r\n"},
		{string(resp.AppendMap([]byte(":1\r\n"), 1, 3)), ":1\r\n%1\r\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// What the writers encode as a command, the reader reads back.
func TestAppendThenRead(t *testing.T) {
	var b []byte
	b = resp.AppendArray(b, 4)
	b = resp.AppendBulkString(b, "INCRBY")
	b = resp.AppendBulk(b, []byte("a\r\nb"))
	b = resp.AppendBulkInt(b, -5)
	b = resp.AppendBulk(b, nil)
	b = resp.AppendArray(b, 1)
	b = resp.AppendBulkInt(b, math.MinInt64)
	got, err := readAll(t, string(b), resp.DefaultLimits)
	if err != io.EOF {
		t.Fatal(err)
	}
	if want := `[["INCRBY" "a\r\nb" "-5" ""] ["-9223372036854775808"]]`; cmdsString(got) != want {
		t.Fatalf("got %s, want %s", cmdsString(got), want)
	}
	if n, ok := resp.ParseInt([]byte(got[1][0])); !ok || n != math.MinInt64 {
		t.Errorf("ParseInt(AppendBulkInt(MinInt64)) = %d, %v", n, ok)
	}
}

// Allocation per command, once the reader is warm, is bounded: reading a
// pipelined command into a reused args slice after a Reset allocates
// nothing.
func TestReadCommandNoAllocWhenWarm(t *testing.T) {
	cmd := []byte("*3\r\n$6\r\nINCRBY\r\n$6\r\norders\r\n$4\r\n1000\r\n")
	src := bytes.NewReader(nil)
	r := resp.NewReader(src, resp.DefaultLimits)
	args := make([][]byte, 0, 8)
	read := func() {
		src.Reset(cmd)
		var err error
		if args, err = r.ReadCommand(args); err != nil || len(args) != 3 {
			t.Fatalf("%q, %v", args, err)
		}
		r.Reset()
	}
	read()
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Errorf("%v allocations per command, want 0", n)
	}
}

// Reset gives back the memory of a large pipeline's arguments, so that an
// idle connection does not keep it, and keeps a small one for reuse.
func TestReset_ReleasesALargeArenaKeepsASmallOne(t *testing.T) {
	big := strings.Repeat("b", 60<<10)
	in := ""
	for range 4 {
		in += "*2\r\n$4\r\nECHO\r\n$" + fmt.Sprint(len(big)) + "\r\n" + big + "\r\n"
	}
	in += "*2\r\n$4\r\nECHO\r\n$5\r\nsmall\r\n"
	r := resp.NewReader(strings.NewReader(in), resp.Limits{})
	for range 4 {
		args, err := r.ReadCommand(nil)
		if err != nil || len(args) != 2 || string(args[1]) != big {
			t.Fatalf("read: %d args, %v", len(args), err)
		}
	}
	if c := resp.ArenaCap(r); c < 4*len(big) {
		t.Fatalf("the arena holds %d bytes before Reset, want at least %d", c, 4*len(big))
	}
	r.Reset()
	if c := resp.ArenaCap(r); c != 0 {
		t.Fatalf("after Reset the arena kept %d bytes", c)
	}
	if args, err := r.ReadCommand(nil); err != nil || string(args[1]) != "small" {
		t.Fatalf("after Reset: %q, %v", args, err)
	}
	kept := resp.ArenaCap(r)
	r.Reset()
	if c := resp.ArenaCap(r); c == 0 || c != kept {
		t.Fatalf("a small arena of %d bytes was not kept (%d)", kept, c)
	}
}
