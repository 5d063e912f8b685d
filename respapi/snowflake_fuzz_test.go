package respapi_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/respapi"
)

// FuzzSnowflakeCommand sends TICKETD.SNOWFLAKE with any namespace and any
// count argument (binary-safe bulk strings) to the front over a real
// connection. The front never panics and answers either exactly the count
// asked (1 to api.MaxSnowflakeIDs; 1 when no count is given) as an array of
// integers, made by one call of the store, or an error reply with no call
// of the store for an argument it refuses.
func FuzzSnowflakeCommand(f *testing.F) {
	for _, s := range []struct {
		ns, count string
		withCount bool
	}{
		{"orders", "3", true}, {"orders", "", false}, {"orders", "0", true}, {"orders", "-1", true},
		{"orders", "10000", true}, {"orders", "10001", true}, {"orders", "1e3", true}, {"orders", " 7", true},
		{"orders", "9223372036854775808", true}, {"bad name", "1", true}, {"", "1", true}, {"a.b-c_d", "+5", true},
	} {
		f.Add(s.ns, s.count, s.withCount)
	}
	st := &snowflakeStore{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv := respapi.New(respapi.Config{Store: st, RequestTimeout: 5 * time.Second})
	go func() { _ = srv.Serve(ln) }()
	f.Cleanup(srv.Close)
	addr := ln.Addr().String()
	f.Fuzz(func(t *testing.T, ns, count string, withCount bool) {
		if len(ns) > 1024 || len(count) > 64 {
			return
		}
		args := []string{"TICKETD.SNOWFLAKE", ns}
		if withCount {
			args = append(args, count)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		c := dialRaw(t, addr)
		before := st.calls.Load()
		c.send(b.String())
		reply := c.reply()
		calls := st.calls.Load() - before

		want := int64(1)
		if withCount {
			// The front reads integers as Redis does (resp.ParseInt: no
			// sign but '-', no leading zeros); the oracle is the standard
			// library's parse of the same shape.
			n, err := strconv.ParseInt(count, 10, 64)
			plain := strconv.FormatInt(n, 10) == count
			if err != nil || !plain || n < 1 || n > api.MaxSnowflakeIDs {
				want = 0
			} else {
				want = n
			}
		}
		if api.ValidateSequenceName(ns) != nil {
			want = 0
		}
		switch {
		case strings.HasPrefix(reply, "["):
			if want == 0 || int64(len(strings.Fields(strings.Trim(reply, "[]")))) != want || calls != 1 {
				t.Fatalf("TICKETD.SNOWFLAKE %q %q (count given: %v) answered %.200s after %d store calls; want %d IDs",
					ns, count, withCount, reply, calls, want)
			}
		case strings.HasPrefix(reply, "-"):
			if want != 0 || calls != 0 {
				t.Fatalf("TICKETD.SNOWFLAKE %q %q (count given: %v) answered %q after %d store calls; want %d IDs",
					ns, count, withCount, reply, calls, want)
			}
		default:
			t.Fatalf("TICKETD.SNOWFLAKE %q %q answered %q", ns, count, reply)
		}
	})
}
