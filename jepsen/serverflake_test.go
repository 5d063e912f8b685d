//go:build linux

package main

import (
	"bufio"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/api"
)

func TestReadRESP_SnowflakeReplies(t *testing.T) {
	v, err := readRESP(bufio.NewReader(strings.NewReader("*3\r\n:7\r\n:9\r\n:12\r\n")))
	if err != nil || len(v.([]any)) != 3 || v.([]any)[2].(int64) != 12 {
		t.Fatalf("array of integers: %v %v", v, err)
	}
	_, err = readRESP(bufio.NewReader(strings.NewReader("-TRYAGAIN clock-behind: node n2's clock is 3s behind\r\n")))
	if !isRESPError(err) || respErrKind(err.Error()) != "TRYAGAIN clock-behind" {
		t.Fatalf("error reply: %v (%s)", err, respErrKind(err.Error()))
	}
	if k := respErrKind("ERR unknown command 'TICKETD.SNOWFLAKE', with args beginning with: 'jep-nodesf' '12'"); k != "ERR unknown command" {
		t.Fatalf("unknown command: %q", k)
	}
	if got := string(respCommand("TICKETD.SNOWFLAKE", "ns", "5")); got != "*3\r\n$17\r\nTICKETD.SNOWFLAKE\r\n$2\r\nns\r\n$1\r\n5\r\n" {
		t.Fatalf("command: %q", got)
	}
}

func TestFirstTickAbove(t *testing.T) {
	l := api.Namespace{EpochMs: 1000, TickMs: 10}
	for _, c := range []struct{ floor, want int64 }{{999, 0}, {1000, 1}, {1009, 1}, {1010, 2}} {
		if got := firstTickAbove(l, c.floor); got != c.want {
			t.Errorf("floor %d: first tick %d, want %d", c.floor, got, c.want)
		}
	}
}
