package cluster

// Robustness of what the Raft port reads from the network: the mux's
// service byte, the leadership probe's frames (both ends), and the frames
// hashicorp/raft's NetworkTransport decodes after an 'R'. Anyone who can
// reach the port can send these bytes (without TLS, anyone at all), so
// none of them may crash a node, wedge a goroutine or stop the cluster.
//
// The fuzz targets run over in-memory connections (fakeConn), and none of
// them runs a Raft node: coverage guidance needs an input to cover the same
// code every time it runs, and a running node's timers and goroutines (or
// the scheduling of a net.Pipe) add coverage at random, which the fuzzer
// takes for new inputs and then spends up to a minute each failing to
// minimize. The TestRaftPort_ tests send the same kinds of bytes (and every
// Raft frame of the corpus) to real nodes over TCP.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testkit"
)

// FuzzMuxServiceHeader feeds arbitrary bytes to the mux as everything an
// accepted connection sends. Properties:
//   - no panic;
//   - a connection whose first byte is 'R' reaches Raft (raftLayer.Accept),
//     one whose first byte is 'P' reaches the probe server, each open and
//     with every byte after the service byte still to be read; any other
//     connection (an empty one included) is closed by the mux and reaches
//     neither;
//   - the mux keeps routing: a well-formed 'R' and 'P' connection after it
//     still arrive;
//   - nothing stays blocked: mux.Close returns promptly and Accept then
//     reports net.ErrClosed.
func FuzzMuxServiceHeader(f *testing.F) {
	for _, s := range []string{"", "R", "P", "X", "\x00", "\xff", "r", "p", "RR", "PP", "PR", "RP",
		"R\x00\x80", "P\x00\x00\x00\x00\x00\x00\x00\x01", "GET / HTTP/1.1\r\n\r\n", "\x16\x03\x01\x00\xa5"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ln := newFakeListener()
		probes := make(chan net.Conn, 4)
		m := newMux(ln, ln.Addr(), nil, discardLogger(), muxServices{probe: func(c net.Conn) { probes <- c }, lease: closeConn, level: closeConn, cert: closeConn})
		raftConns := make(chan net.Conn, 4)
		acceptDone := make(chan error, 1)
		go func() {
			for {
				c, err := raftLayer{m}.Accept()
				if err != nil {
					acceptDone <- err
					return
				}
				raftConns <- c
			}
		}()
		// route receives a connection from ch and checks that it is the one
		// sent, still open, with body left to read.
		route := func(ch chan net.Conn, service string, sent *fakeConn, body []byte) {
			t.Helper()
			c := receiveConn(t, ch, service)
			got := c
			if rc, ok := c.(*raftConn); ok {
				got = rc.Conn // the mux's wrapper, so that Close can close it
			}
			if got != net.Conn(sent) {
				t.Fatalf("the %s service got another connection than the one sent", service)
			}
			if sent.isClosed() {
				t.Fatalf("the mux closed a connection it routed to %s", service)
			}
			// Not io.ReadAll: its buffer growth is coverage that depends
			// only on the input's length.
			rest := make([]byte, len(body))
			if _, err := io.ReadFull(c, rest); err != nil || !bytes.Equal(rest, body) {
				t.Fatalf("%s connection has %q (%v) left to read, want %q", service, rest, err, body)
			}
			if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("%s connection: %d bytes, %v after the sent ones, want EOF", service, n, err)
			}
			_ = c.Close()
		}

		sent := ln.send(t, data)
		switch {
		case len(data) > 0 && data[0] == muxRaft:
			route(raftConns, "raft", sent, data[1:])
		case len(data) > 0 && data[0] == muxProbe:
			route(probes, "probe", sent, data[1:])
		default:
			waitClosed(t, sent, fmt.Sprintf("connection with service byte %q", data[:min(1, len(data))]))
		}
		// Once the fuzzed connection is settled, nothing else was routed.
		select {
		case <-raftConns:
			t.Fatalf("an extra connection reached Raft")
		case <-probes:
			t.Fatalf("an extra connection reached the probe server")
		default:
		}

		// The mux still routes well-formed connections.
		body := []byte("still routed")
		route(raftConns, "raft", ln.send(t, append([]byte{muxRaft}, body...)), body)
		route(probes, "probe", ln.send(t, append([]byte{muxProbe}, body...)), body)

		closeWithin(t, m, 2*time.Second)
		select {
		case err := <-acceptDone:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Accept still blocked after mux.Close")
		}
	})
}

// TestMux_Close_SilentAndUnacceptedConnections_ReturnsPromptly: Close does
// not wait out muxHeaderTimeout for a client that never names its service
// (it used to: an idle connection, say a port scanner's, held up a node's
// shutdown by up to 5 s), and it closes an 'R' connection that Raft never
// accepted.
func TestMux_Close_SilentAndUnacceptedConnections_ReturnsPromptly(t *testing.T) {
	ln := listenLoopback(t)
	probes := make(chan net.Conn, 1)
	m := newMux(ln, ln.Addr(), nil, discardLogger(), muxServices{probe: func(c net.Conn) { probes <- c }, lease: closeConn, level: closeConn, cert: closeConn})
	silent := dialLoopback(t, ln.Addr().String())
	defer silent.Close()
	unaccepted := dialLoopback(t, ln.Addr().String())
	defer unaccepted.Close()
	if _, err := unaccepted.Write([]byte{muxRaft}); err != nil {
		t.Fatal(err)
	}
	// The mux accepts in order: once a later probe connection is routed,
	// both connections above have been accepted.
	barrier := dialLoopback(t, ln.Addr().String())
	defer barrier.Close()
	if _, err := barrier.Write([]byte{muxProbe}); err != nil {
		t.Fatal(err)
	}
	_ = receiveConn(t, probes, "probe").Close()
	closeWithin(t, m, time.Second)
	for name, c := range map[string]net.Conn{"silent": silent, "unaccepted": unaccepted} {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("%s connection still open after Close: %v", name, err)
		}
	}
}

// FuzzProbeFrame feeds arbitrary bytes to both ends of the leadership probe.
//
// Server side (data is everything a client sends to probeServer.serve):
//   - no panic;
//   - one answer per complete 8-byte request, in order, each echoing the
//     request's id and carrying the term read for it; nothing else is
//     written, a truncated last request gets no answer, and serve closes
//     the connection and returns when the client's bytes end.
//
// Client side (data, cut into chunks by probeChunks, is what a voter
// answers: chunk i once it has read request i, and it hangs up as soon as
// it has sent fewer than 16 bytes per request read):
//   - no panic;
//   - every request carries a fresh id (1, 2, ...);
//   - a round returns the term only if the 16 bytes it reads are a
//     complete answer whose id is that round's request id, and an error
//     otherwise: a stale answer (an earlier round's id, a duplicate) or a
//     short one is never taken for the current round's;
//   - after an error the connection is never reused: the next probe dials
//     again, and an honest voter's answer comes through.
//
// (An answer that arrives before its request, with the id the client will
// use next, is taken: ids are sequential. Only a voter that lies could send
// one, and a lying voter can as well lie about its term.)
func FuzzProbeFrame(f *testing.F) {
	f.Add([]byte{}, uint64(0))
	f.Add(bytes.Repeat([]byte{0xff}, 8), uint64(7))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"), uint64(1<<63))
	// Client side scripts: length-prefixed chunks of answers.
	f.Add(probeScript(probeAnswer(1, 5), probeAnswer(2, 5)), uint64(5))
	f.Add(probeScript(probeAnswer(2, 5)), uint64(5))                                    // wrong id
	f.Add(probeScript(probeAnswer(1, 5)[:11]), uint64(5))                               // short frame
	f.Add(probeScript(append(probeAnswer(1, 5), probeAnswer(1, 6)...)), uint64(5))      // duplicate: stale in round 2
	f.Add(probeScript(probeAnswer(1, 5)[:10], probeAnswer(1, 5)[10:]), uint64(5))       // split across rounds
	f.Add(probeScript(probeAnswer(1, 1<<64-1), nil, probeAnswer(3, 2)), uint64(9))      // garbage term, silent round
	f.Add(probeScript(append(probeAnswer(1, 4), probeAnswer(2, 4)...), nil), uint64(4)) // answer sent ahead
	f.Fuzz(func(t *testing.T, data []byte, term uint64) {
		data = data[:min(len(data), maxProbeInput)]
		checkProbeServer(t, data, term)
		checkProbeClient(t, data, term)
	})
}

// maxProbeInput caps the bytes FuzzProbeFrame uses: 24 requests, or a
// dozen answers. Every loop over the input runs a number of times that the
// fuzzer counts as coverage, so a longer input always looks new, and the
// fuzzer then spends up to a minute minimizing it, fuzzing nothing.
const maxProbeInput = 192

// checkProbeServer has a probe server read data and checks its answers.
func checkProbeServer(t *testing.T, data []byte, term uint64) {
	var calls uint64 // the k-th answer carries term+k
	s := newProbeServer(func() uint64 { calls++; return term + calls - 1 })
	c := newFakeConn(data)
	s.serve(c) // returns once data is used up
	if !c.isClosed() {
		t.Fatal("serve returned without closing the connection")
	}
	full := len(data) / 8
	out := c.written()
	if len(out) != 16*full {
		t.Fatalf("server wrote %d bytes for %d bytes of requests, want %d", len(out), len(data), 16*full)
	}
	for k := 0; k < full; k++ {
		a := out[16*k : 16*k+16]
		if !bytes.Equal(a[:8], data[8*k:8*k+8]) {
			t.Fatalf("answer %d echoes id %x, want %x", k, a[:8], data[8*k:8*k+8])
		}
		if got, want := binary.BigEndian.Uint64(a[8:]), term+uint64(k); got != want {
			t.Fatalf("answer %d carries term %d, want %d", k, got, want)
		}
	}
	s.Close()
	// A server that is closed turns connections away.
	late := newFakeConn(probeAnswer(1, 1))
	s.serve(late)
	if !late.isClosed() || len(late.written()) != 0 {
		t.Fatal("a closed probe server answered")
	}
}

// checkProbeClient runs probe rounds against a voter that answers with the
// chunks of script until a round fails, then one against an honest voter.
func checkProbeClient(t *testing.T, script []byte, honestTerm uint64) {
	chunks := probeChunks(script)
	var scriptedIDs, honestIDs []uint64
	var voters []*fakeConn
	dial := func(string, time.Duration) (net.Conn, error) {
		var v *fakeConn
		if len(voters) == 0 {
			v = newScriptedVoter(t, chunks, &scriptedIDs)
		} else {
			v = newHonestVoter(t, honestTerm, &honestIDs)
		}
		voters = append(voters, v)
		return v, nil
	}
	pc := newProbeClient(dial, muxProbe)

	stream := bytes.Join(chunks, nil)
	avail := 0 // bytes the voter has sent once it has read request round
	round := 0
	for {
		round++
		if round <= len(chunks) {
			avail += len(chunks[round-1])
		}
		got, err := pc.probe("voter:1", time.Now().Add(time.Minute))
		lo, hi := 16*(round-1), 16*round
		if avail < hi {
			if err == nil {
				t.Fatalf("round %d returned term %d from a short answer (%d of 16 bytes)", round, got, avail-lo)
			}
			break
		}
		ans := stream[lo:hi]
		id, term := binary.BigEndian.Uint64(ans[:8]), binary.BigEndian.Uint64(ans[8:])
		if id != uint64(round) {
			if err == nil {
				t.Fatalf("round %d accepted an answer for request %d (term %d)", round, id, got)
			}
			break
		}
		if err != nil || got != term {
			t.Fatalf("round %d: got (%d, %v) for a matching answer with term %d", round, got, err, term)
		}
	}
	if !voters[0].isClosed() {
		t.Fatal("the client kept a connection after a failed round")
	}
	// The next probe dials again and gets the honest voter's answer.
	got, err := pc.probe("voter:1", time.Now().Add(time.Minute))
	if err != nil || got != honestTerm {
		t.Fatalf("probe after a failed round: got (%d, %v), want term %d", got, err, honestTerm)
	}
	if len(voters) != 2 {
		t.Fatalf("%d dials, want 2", len(voters))
	}
	for i, id := range scriptedIDs {
		if id != uint64(i+1) {
			t.Fatalf("request %d carried id %d, want %d", i+1, id, i+1)
		}
	}
	if len(scriptedIDs) != round || len(honestIDs) != 1 || honestIDs[0] != uint64(round+1) {
		t.Fatalf("voters read ids %v then %v after %d rounds", scriptedIDs, honestIDs, round)
	}
	pc.closeAll()
	if !voters[1].isClosed() {
		t.Fatal("closeAll left a connection open")
	}
	if _, err := pc.probe("voter:1", time.Now().Add(time.Minute)); !errors.Is(err, errProbeClientClosed) {
		t.Fatalf("probe after closeAll: %v, want errProbeClientClosed", err)
	}
}

// newScriptedVoter is a voter's end of a probe connection that, once it has
// read request i, sends chunks[i-1] (nothing once they run out), and hangs
// up (EOF after what it sent) as soon as it has sent fewer than 16 bytes
// per request: the client would otherwise wait for bytes that never come.
func newScriptedVoter(t *testing.T, chunks [][]byte, ids *[]uint64) *fakeConn {
	sent := 0
	return newVoterConn(t, func(c *fakeConn, id uint64) {
		*ids = append(*ids, id)
		i := len(*ids)
		if i <= len(chunks) {
			c.in = append(c.in, chunks[i-1]...)
			sent += len(chunks[i-1])
		}
		if sent < 16*i {
			c.eof = true
		}
	})
}

// newHonestVoter answers every request with its id and term.
func newHonestVoter(t *testing.T, term uint64, ids *[]uint64) *fakeConn {
	return newVoterConn(t, func(c *fakeConn, id uint64) {
		*ids = append(*ids, id)
		c.in = append(c.in, probeAnswer(id, term)...)
	})
}

// newVoterConn is a probe connection seen from the client: it expects the
// service byte, then calls answer (with c.mu held) for every 8-byte
// request.
func newVoterConn(t *testing.T, answer func(c *fakeConn, id uint64)) *fakeConn {
	c := newFakeConn(nil)
	c.eof = false
	var pending []byte
	named := false
	c.onWrite = func(b []byte) {
		pending = append(pending, b...)
		if !named && len(pending) > 0 {
			if pending[0] != muxProbe {
				t.Errorf("probe connection opened with service byte %q", pending[0])
			}
			named, pending = true, pending[1:]
		}
		for len(pending) >= 8 {
			answer(c, binary.BigEndian.Uint64(pending[:8]))
			pending = pending[8:]
		}
	}
	return c
}

// probeChunks cuts a client-side script into chunks: each is a length byte
// (mod 49, so up to three answers) and that many bytes.
func probeChunks(script []byte) [][]byte {
	var chunks [][]byte
	for len(script) > 0 {
		n := min(int(script[0])%49, len(script)-1)
		chunks = append(chunks, script[1:1+n])
		script = script[1+n:]
	}
	return chunks
}

// probeScript is the inverse of probeChunks, for seeds.
func probeScript(chunks ...[]byte) []byte {
	var out []byte
	for _, c := range chunks {
		out = append(out, byte(len(c)))
		out = append(out, c...)
	}
	return out
}

func probeAnswer(id, term uint64) []byte {
	var a [16]byte
	binary.BigEndian.PutUint64(a[:8], id)
	binary.BigEndian.PutUint64(a[8:], term)
	return a[:]
}

// FuzzRaftTransportFrames sends 'R' and then arbitrary bytes through the
// mux to hashicorp/raft's NetworkTransport, which reads a one-byte RPC type
// and a msgpack body, hands each decoded RPC to Raft (here a consumer that
// answers every RPC) and closes the connection on a decode error or EOF
// (net_transport.go, handleConn). Properties:
//   - no panic;
//   - the transport closes the connection once the bytes end: it never
//     waits on a frame that cannot be completed;
//   - it writes an answer only for an RPC that it handed to Raft, and
//     answers every RPC it handed over;
//   - it keeps serving: a well-formed AppendEntries on the next connection
//     is handed over and answered.
//
// Frames that declare a string or binary of more than 1 MiB are skipped:
// go-msgpack allocates a time.Time's declared length before reading it
// (TestRaftPort_HugeDeclaredTimeLength_KnownIssue), so each would cost the
// fuzzing process gigabytes. TestRaftPort_FrameCorpus_SoloNodeKeepsCommitting
// sends the seeds (those included) and the corpus in testdata to a real
// node and checks that it keeps committing.
func FuzzRaftTransportFrames(f *testing.F) {
	for _, frame := range raftFrameSeeds(f) {
		f.Add(frame)
	}
	good := append([]byte{muxRaft}, capturedFrames(f)["AppendEntries"]...)
	f.Fuzz(func(t *testing.T, frame []byte) {
		frame = frame[:min(len(frame), maxRaftFrameInput)]
		if declaresHugeLength(frame) {
			t.Skip("declares a string or binary of more than 1 MiB (known go-msgpack issue)")
		}
		ln := newFakeListener()
		m := newMux(ln, ln.Addr(), nil, discardLogger(), muxServices{probe: closeConn, lease: closeConn, level: closeConn, cert: closeConn})
		trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: raftLayer{m}, MaxPool: 1, Timeout: time.Second,
			Logger: newRaftLogger(discardLogger(), slog.LevelError),
		})
		var handed atomic.Int64
		stop := make(chan struct{})
		consumed := make(chan struct{})
		go func() {
			defer close(consumed)
			for {
				select {
				case rpc := <-trans.Consumer():
					if rpc.Reader != nil {
						_, _ = io.Copy(io.Discard, rpc.Reader) // as Raft reads a snapshot
					}
					handed.Add(1)
					rpc.Respond(rpcResponse(rpc.Command), nil)
				case <-stop:
					return
				}
			}
		}()
		defer func() {
			_ = trans.Close()
			closeWithin(t, m, 2*time.Second)
			close(stop)
			<-consumed
		}()

		c := ln.send(t, append([]byte{muxRaft}, frame...))
		waitClosed(t, c, "connection with the fuzzed frame")
		n, out := handed.Load(), c.written()
		if n == 0 && len(out) > 0 {
			t.Fatalf("transport wrote %d bytes without handing an RPC to Raft", len(out))
		}
		if n > 0 && len(out) == 0 {
			t.Fatalf("transport handed %d RPCs to Raft and answered none", n)
		}

		next := ln.send(t, good)
		waitClosed(t, next, "connection with a well-formed AppendEntries")
		if handed.Load() != n+1 || len(next.written()) == 0 {
			t.Fatalf("a well-formed AppendEntries after the fuzzed frame was not handed over and answered")
		}
	})
}

// maxRaftFrameInput caps the bytes FuzzRaftTransportFrames sends: the
// largest real frame (an AppendEntries of two entries) is under 300 bytes,
// and a frame that declares a huge length needs only a few (see the
// seeds). A longer input would only make the decoder's loops run more
// often, which the fuzzer takes for new coverage (see maxProbeInput).
const maxRaftFrameInput = 512

// declaresHugeLength reports whether a stream of Raft frames (RPC type
// byte, msgpack body, again) holds a str, bin or ext header that declares
// more than 1 MiB. It follows the msgpack framing as the decoder does; where
// it cannot (the raw data after an InstallSnapshot header) it looks at every
// byte, which may flag more than the decoder would see, never less.
func declaresHugeLength(b []byte) bool {
	const huge = 1 << 20
	for len(b) > 0 {
		typ := b[0]
		if typ > 4 { // not an RPC type: the transport hangs up here
			return false
		}
		rest, found, ok := msgpackValue(b[1:], huge)
		if found || !ok {
			return found
		}
		b = rest
		if typ == 2 { // InstallSnapshot: raw data follows
			for i := 0; i+5 <= len(b); i++ {
				if (b[i] == 0xc6 || b[i] == 0xc9 || b[i] == 0xdb) && binary.BigEndian.Uint32(b[i+1:]) > huge {
					return true
				}
			}
			return false
		}
	}
	return false
}

// msgpackValue skips one msgpack value at the start of b and returns the
// rest; found reports a str, bin or ext longer than limit, ok false a
// truncated or invalid value.
func msgpackValue(b []byte, limit uint64) (rest []byte, found, ok bool) {
	if len(b) == 0 {
		return nil, false, false
	}
	t := b[0]
	b = b[1:]
	var width int // bytes of the length that follows t
	switch t {
	case 0xc4, 0xc7, 0xd9:
		width = 1
	case 0xc5, 0xc8, 0xda, 0xdc, 0xde:
		width = 2
	case 0xc6, 0xc9, 0xdb, 0xdd, 0xdf:
		width = 4
	}
	if len(b) < width {
		return nil, false, false
	}
	var l uint64
	for _, c := range b[:width] {
		l = l<<8 | uint64(c)
	}
	b = b[width:]
	var data, items uint64 // payload bytes and nested values that follow
	switch {
	case t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3: // fixint, nil, bool
	case t <= 0x8f: // fixmap
		items = 2 * uint64(t&0x0f)
	case t <= 0x9f: // fixarray
		items = uint64(t & 0x0f)
	case t <= 0xbf: // fixstr
		data = uint64(t & 0x1f)
	case t == 0xc4 || t == 0xc5 || t == 0xc6 || t == 0xd9 || t == 0xda || t == 0xdb: // bin, str
		if l > limit {
			return nil, true, false
		}
		data = l
	case t == 0xc7 || t == 0xc8 || t == 0xc9: // ext: a type byte, then the data
		if l > limit {
			return nil, true, false
		}
		data = 1 + l
	case t == 0xcc || t == 0xd0: // uint8, int8
		data = 1
	case t == 0xcd || t == 0xd1:
		data = 2
	case t == 0xca || t == 0xce || t == 0xd2: // float32, uint32, int32
		data = 4
	case t == 0xcb || t == 0xcf || t == 0xd3:
		data = 8
	case t >= 0xd4 && t <= 0xd8: // fixext: a type byte, then 1 to 16 bytes
		data = 1 + 1<<(t-0xd4)
	case t == 0xdc || t == 0xdd: // array16, array32
		items = l
	case t == 0xde || t == 0xdf: // map16, map32
		items = 2 * l
	default: // 0xc1 is never used
		return nil, false, false
	}
	if data > uint64(len(b)) {
		return nil, false, false
	}
	b = b[data:]
	for ; items > 0; items-- {
		if b, found, ok = msgpackValue(b, limit); found || !ok {
			return nil, found, ok
		}
	}
	return b, false, true
}

// rpcResponse is an empty response of the kind cmd wants.
func rpcResponse(cmd any) any {
	switch cmd.(type) {
	case *raft.AppendEntriesRequest:
		return &raft.AppendEntriesResponse{}
	case *raft.RequestVoteRequest:
		return &raft.RequestVoteResponse{}
	case *raft.RequestPreVoteRequest:
		return &raft.RequestPreVoteResponse{}
	case *raft.InstallSnapshotRequest:
		return &raft.InstallSnapshotResponse{}
	case *raft.TimeoutNowRequest:
		return &raft.TimeoutNowResponse{}
	}
	return nil
}

// raftFrameSeeds are the Raft frames (after the 'R') the fuzz target and
// the corpus test start from: every real RPC of this raft version whole
// and cut in half, and hand-made edge cases of the msgpack decoder.
func raftFrameSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, frame := range capturedFrames(t) {
		seeds = append(seeds, frame, frame[:len(frame)/2])
	}
	for _, s := range []string{
		"", "\x00", "\x05\x80", "\xff", // no body, unknown types
		"\x00\x80", "\x01\xc0", "\x03\x80", // empty bodies that decode (TimeoutNow starts an election)
		"\x00\xdf\xff\xff\xff\xff",                             // a map of 2^32-1 entries, none sent
		"\x00\x81\xa7Entries\xdd\xff\xff\xff\xff",              // an array of 2^32-1 entries, none sent
		"\x00\x81\xa4Term\xc6\xff\xff\xff\xff",                 // a 4 GiB bin where a number belongs
		"\x00\x81\xa9RPCHeader\x81\xa2ID\xdb\x7f\xff\xff\xff",  // a 2 GiB string, none sent
		"\x02\x81\xa4Size\xcf\x7f\xff\xff\xff\xff\xff\xff\xff", // a snapshot of 2^63-1 bytes, none sent
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// TestRaftPort_FrameCorpus_SoloNodeKeepsCommitting sends 'R' and every
// Raft frame of the seeds and of the fuzz corpus in testdata to a real
// single-node cluster over TCP, one connection each, closed for writing
// after the frame. After each the node has closed the connection, is up,
// and commits an Apply (a frame that decodes to a valid RPC, such as
// TimeoutNow, may cost an election, never the cluster).
func TestRaftPort_FrameCorpus_SoloNodeKeepsCommitting(t *testing.T) {
	frames := raftFrameSeeds(t)
	corpus, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzRaftTransportFrames", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range corpus {
		frames = append(frames, readCorpusBytes(t, path))
	}
	nodes := startNodes(t, 1, fastTimings)
	node := nodes[0]
	cmd := fsm.EncodeSetMember(fsm.SetMember{ID: "corpus", RaftAddr: "127.0.0.1:1"})
	applyEventually(t, nodes, cmd, 10*time.Second)
	for i, frame := range frames {
		c := dialLoopback(t, node.RaftAddr()).(*net.TCPConn)
		go func() {
			if _, err := c.Write(append([]byte{muxRaft}, frame...)); err == nil {
				_ = c.CloseWrite()
			}
		}()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c)
		_ = c.Close()
		if isTimeout(err) {
			t.Fatalf("frame %d (%q): the node kept the connection open after the frame ended", i, frame)
		}
		if node.raft.State() == raft.Shutdown {
			t.Fatalf("frame %d (%q): the node shut down", i, frame)
		}
		applyEventually(t, nodes, cmd, 10*time.Second)
	}
}

// TestRaftPort_HugeDeclaredTimeLength_KnownIssue: a 29-byte 'R' frame
// makes a node allocate the length that an entry's AppendedAt declares, up
// to 4 GiB per connection, before a byte of it arrives. go-msgpack
// (v2.1.2, unchanged in v2.1.5) decodes a time.Time from a str or bin by
// readx(declared length), which is make([]byte, n); raft's transport gives
// us no hook to bound it. A few connections exhaust memory. Only TLS on the
// Raft port keeps strangers from sending it; the fix belongs in go-msgpack
// (check the length, at most 16 bytes for a time, before reading). The test
// fails until then; set TICKETD_KNOWN_ISSUES=1 to run it.
func TestRaftPort_HugeDeclaredTimeLength_KnownIssue(t *testing.T) {
	if os.Getenv("TICKETD_KNOWN_ISSUES") == "" {
		t.Skip("known go-msgpack issue; set TICKETD_KNOWN_ISSUES=1 to run")
	}
	nodes := startNodes(t, 1, fastTimings)
	node := nodes[0]
	applyEventually(t, nodes, fsm.EncodeSetMember(fsm.SetMember{ID: "x", RaftAddr: "127.0.0.1:1"}), 10*time.Second)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := dialLoopback(t, node.RaftAddr())
	defer c.Close()
	// An AppendEntries whose one entry's AppendedAt is a str32 of 1 GiB.
	frame := "R\x00\x81\xa7Entries\x91\x81\xaaAppendedAt\xdb\x40\x00\x00\x00"
	if _, err := c.Write([]byte(frame)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for runtime.ReadMemStats(&after); time.Now().Before(deadline) && after.TotalAlloc-before.TotalAlloc < 1<<29; runtime.ReadMemStats(&after) {
		time.Sleep(10 * time.Millisecond)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("a %d-byte frame made the node allocate %d MiB", len(frame), grew>>20)
	}
}

// readCorpusBytes reads a one-[]byte file in the "go test fuzz v1" format.
func readCorpusBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" ||
		!strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
		t.Fatalf("%s: not a one-[]byte fuzz corpus file", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}

// TestRaftPort_GarbageAndTruncatedFrames_EveryNodeStaysUp sends every node
// of a real 3-node cluster random garbage, each service byte followed by
// truncated frames, half-open connections that never send (before and
// after the service byte), and 'R' with a truncated AppendEntries; then
// every node is still up, a leader serves, a leadership probe round
// succeeds, an Apply commits on all three, and every node shuts down
// promptly although half-open connections are still open.
func TestRaftPort_GarbageAndTruncatedFrames_EveryNodeStaysUp(t *testing.T) {
	nodes := startNodes(t, 3, raceTimings)
	applyEventually(t, nodes, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "before", Start: 1, Max: 1 << 40}), 10*time.Second)

	frames := capturedFrames(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			_ = c.Close()
		}
	}()
	send := func(addr string, b []byte) {
		c := dialLoopback(t, addr)
		_, _ = c.Write(b)
		_ = c.Close()
	}
	for _, n := range nodes {
		addr := n.RaftAddr()
		// Random garbage, whatever its first byte.
		for i := 0; i < 20; i++ {
			b := make([]byte, rng.IntN(2048))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			send(addr, b)
		}
		// Each service byte (and some that name no service) followed by
		// truncated frames: cuts of every real Raft frame, and of a probe
		// request.
		for _, svc := range []byte{muxRaft, muxProbe, 'X', 0, 0xff} {
			for _, fr := range frames {
				for _, cut := range []int{0, 1, 2, len(fr) / 3, len(fr) / 2, len(fr) - 1} {
					send(addr, append([]byte{svc}, fr[:cut]...))
				}
			}
			for cut := 1; cut < 8; cut++ {
				send(addr, append([]byte{svc}, bytes.Repeat([]byte{0xab}, cut)...))
			}
		}
		// Half-open connections that never finish: nothing at all, a bare
		// service byte, a truncated AppendEntries, half a probe request.
		ae := frames["AppendEntries"]
		for _, b := range [][]byte{nil, {muxRaft}, {muxProbe}, append([]byte{muxRaft}, ae[:len(ae)/2]...), {muxProbe, 0, 0, 0}} {
			c := dialLoopback(t, addr)
			if _, err := c.Write(b); err != nil {
				t.Fatal(err)
			}
			idle = append(idle, c)
		}
		// 'R' and an AppendEntries cut short, the client then gone.
		send(addr, append([]byte{muxRaft}, ae[:len(ae)-3]...))
	}

	for _, n := range nodes {
		if s := n.raft.State(); s == raft.Shutdown {
			t.Fatalf("%s shut down", n.ID())
		}
	}
	applyEventually(t, nodes, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "after", Start: 1, Max: 1 << 40}), 10*time.Second)
	testkit.Eventually(t, 5*time.Second, 5*time.Millisecond, "the entry applied on every node", func() bool {
		for _, n := range nodes {
			if _, ok := n.Sequence("after"); !ok {
				return false
			}
		}
		return true
	})
	// A probe round (the 'P' service of every node) still confirms the
	// leader; leadership may move meanwhile, so ask whoever leads.
	testkit.Eventually(t, 5*time.Second, 5*time.Millisecond, "a probe round to confirm a leader", func() bool {
		for _, n := range nodes {
			if _, ok := n.Leadership(); ok {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_, err := n.VerifyLeader(ctx)
				return err == nil
			}
		}
		return false
	})

	// Half-open connections must not hold up shutdown.
	for _, n := range nodes {
		start := time.Now()
		if err := n.Shutdown(context.Background(), false); err != nil {
			t.Errorf("shutdown %s: %v", n.ID(), err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("shutdown of %s took %v with half-open connections open", n.ID(), d)
		}
	}
}

// Test harness.

// applyEventually applies cmd on whichever node serves as leader, retrying
// while there is none or leadership moves, and returns the node that
// applied it.
func applyEventually(t testing.TB, nodes []*Node, cmd []byte, timeout time.Duration) *Node {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error = ErrNotLeader
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if _, ok := n.Leadership(); !ok {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Until(deadline))
			_, err := n.Apply(ctx, cmd)
			cancel()
			if err == nil {
				return n
			}
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrLeadershipLost) {
				t.Fatalf("apply on %s: %v", n.ID(), err)
			}
			last = err
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no apply committed within %v: %v", timeout, last)
	return nil
}

// capturedFrames returns real frames of this raft version (the RPC type
// byte and the msgpack body, without the mux's service byte), as its
// NetworkTransport writes them. Their terms are 0, so a node rejects them,
// except TimeoutNow, which has no term: it starts an election.
func capturedFrames(t testing.TB) map[string][]byte {
	t.Helper()
	layer := &captureLayer{conns: make(chan net.Conn, 1), closed: make(chan struct{})}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 1, Timeout: time.Second,
		Logger: newRaftLogger(discardLogger(), slog.LevelError),
	})
	defer trans.Close()
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("fuzz"), Addr: []byte("127.0.0.1:1")}
	entry := func(i uint64, data string) *raft.Log {
		return &raft.Log{Index: i, Type: raft.LogCommand, Data: []byte(data), AppendedAt: time.Unix(0, 0)}
	}
	calls := map[string]func(){
		"AppendEntries": func() {
			_ = trans.AppendEntries("x", "x", &raft.AppendEntriesRequest{
				RPCHeader: header, PrevLogEntry: 7, LeaderCommitIndex: 7,
				Entries: []*raft.Log{entry(8, "\x03{\"id\":\"fuzz\"}"), entry(9, "\x01{\"name\":\"x\",\"start\":1,\"max\":9}")},
			}, &raft.AppendEntriesResponse{})
		},
		"RequestVote": func() {
			_ = trans.RequestVote("x", "x", &raft.RequestVoteRequest{RPCHeader: header, LastLogIndex: 9}, &raft.RequestVoteResponse{})
		},
		"RequestPreVote": func() {
			_ = trans.RequestPreVote("x", "x", &raft.RequestPreVoteRequest{RPCHeader: header, LastLogIndex: 9}, &raft.RequestPreVoteResponse{})
		},
		"TimeoutNow": func() {
			_ = trans.TimeoutNow("x", "x", &raft.TimeoutNowRequest{RPCHeader: header}, &raft.TimeoutNowResponse{})
		},
		"InstallSnapshot": func() {
			_ = trans.InstallSnapshot("x", "x", &raft.InstallSnapshotRequest{
				RPCHeader: header, SnapshotVersion: raft.SnapshotVersionMax, LastLogIndex: 9, Size: 4,
			}, &raft.InstallSnapshotResponse{}, bytes.NewReader([]byte("snap")))
		},
	}
	frames := make(map[string][]byte)
	for name, call := range calls {
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		c := <-layer.conns
		// The transport flushes the type byte and the body with one write
		// (InstallSnapshot's data follows in another: it is left out).
		buf := make([]byte, 1<<16)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		if err != nil || n < 2 {
			t.Fatalf("capture %s: %d bytes, %v", name, n, err)
		}
		_ = c.Close()
		<-done
		frames[name] = buf[:n]
	}
	return frames
}

// captureLayer is a raft.StreamLayer whose dials end in net.Pipes that
// capturedFrames reads.
type captureLayer struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *captureLayer) Dial(raft.ServerAddress, time.Duration) (net.Conn, error) {
	c, s := net.Pipe()
	l.conns <- s
	return c, nil
}

func (l *captureLayer) Accept() (net.Conn, error) {
	<-l.closed
	return nil, net.ErrClosed
}

func (l *captureLayer) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *captureLayer) Addr() net.Addr { return advertiseAddr("capture:1") }

// fakeListener is a net.Listener whose connections are fakeConns.
type fakeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newFakeListener() *fakeListener {
	return &fakeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *fakeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *fakeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *fakeListener) Addr() net.Addr { return advertiseAddr("127.0.0.1:1") }

// send has the listener accept a connection whose peer sends b and then
// ends its side.
func (l *fakeListener) send(t testing.TB, b []byte) *fakeConn {
	t.Helper()
	c := newFakeConn(b)
	select {
	case l.conns <- c:
	case <-time.After(5 * time.Second):
		t.Fatal("listener did not accept")
	}
	return c
}

// fakeConn is an in-memory connection, seen from the side that reads what
// the peer sent: Read returns in, then EOF once eof is set; Write records
// what is written (and calls onWrite, with mu held). Deadlines are ignored.
// Nothing here blocks, so an input always runs the same code.
type fakeConn struct {
	mu      sync.Mutex
	in      []byte
	eof     bool
	out     []byte
	onWrite func(b []byte)
	closed  chan struct{}
}

var errWouldBlock = errors.New("fakeConn: read would block forever")

func newFakeConn(in []byte) *fakeConn {
	return &fakeConn{in: bytes.Clone(in), eof: true, closed: make(chan struct{})}
}

func (c *fakeConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.isClosed():
		return 0, net.ErrClosed
	case len(c.in) > 0:
		n := copy(b, c.in)
		c.in = c.in[n:]
		return n, nil
	case c.eof:
		return 0, io.EOF
	}
	return 0, errWouldBlock
}

func (c *fakeConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed() {
		return 0, net.ErrClosed
	}
	c.out = append(c.out, b...)
	if c.onWrite != nil {
		c.onWrite(b)
	}
	return len(b), nil
}

func (c *fakeConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed() {
		return net.ErrClosed
	}
	close(c.closed)
	return nil
}

func (c *fakeConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *fakeConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out)
}

func (c *fakeConn) LocalAddr() net.Addr              { return advertiseAddr("127.0.0.1:1") }
func (c *fakeConn) RemoteAddr() net.Addr             { return advertiseAddr("127.0.0.1:2") }
func (c *fakeConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

func waitClosed(t testing.TB, c *fakeConn, what string) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s was not closed", what)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func dialLoopback(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func receiveConn(t testing.TB, ch chan net.Conn, service string) net.Conn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(5 * time.Second):
		t.Fatalf("connection did not reach the %s service", service)
		return nil
	}
}

func closeWithin(t testing.TB, m *mux, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = m.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("mux.Close still blocked after %v", d)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// FuzzLeaseFrame feeds arbitrary bytes to the lease service (promise.go),
// as a peer on the Raft port could send them:
//   - no panic;
//   - one 17-byte answer per complete 33-byte request, in order, echoing
//     its id and carrying the current term; nothing for a truncated last
//     request, and serve closes the connection when the bytes end;
//   - a promise only for op promise, in the node's own term (never term
//     0), for a duration in (0, maxLeaseDuration], and one given leaves the
//     node refusing votes.
func FuzzLeaseFrame(f *testing.F) {
	req := func(id uint64, op byte, term uint64, d time.Duration, seq uint64) []byte {
		b := make([]byte, leaseReqSize)
		binary.BigEndian.PutUint64(b[:8], id)
		b[8] = op
		binary.BigEndian.PutUint64(b[9:17], term)
		binary.BigEndian.PutUint64(b[17:25], uint64(d))
		binary.BigEndian.PutUint64(b[25:33], seq)
		return b
	}
	f.Add([]byte{}, uint64(3))
	f.Add(req(1, leaseOpPromise, 3, time.Second, 1), uint64(3))
	f.Add(req(1, leaseOpPromise, 2, time.Second, 1), uint64(3))                                             // older term
	f.Add(req(1, leaseOpPromise, 3, maxLeaseDuration+1, 1), uint64(3))                                      // too long
	f.Add(append(req(1, leaseOpPromise, 3, time.Second, 5), req(2, leaseOpRelease, 3, 0, 6)...), uint64(3)) // promise, release
	f.Add(append(req(1, leaseOpRelease, 3, 0, 6), req(2, leaseOpPromise, 3, time.Second, 5)...), uint64(3)) // late promise
	f.Add(append(req(1, 9, 3, time.Second, 1), 1, 2, 3), uint64(3))                                         // unknown op, short tail
	f.Add(req(1, leaseOpPromise, 0, time.Second, 1), uint64(0))                                             // term 0
	f.Fuzz(func(t *testing.T, data []byte, term uint64) {
		data = data[:min(len(data), 8*leaseReqSize)]
		p, err := newPromises(t.TempDir(), func() uint64 { return term }, false)
		if err != nil {
			t.Fatal(err)
		}
		n := &Node{promises: p}
		c := newFakeConn(data)
		n.serveLease(c)
		if !c.isClosed() {
			t.Fatal("serveLease returned without closing the connection")
		}
		full := len(data) / leaseReqSize
		out := c.written()
		if len(out) != leaseRespSize*full {
			t.Fatalf("wrote %d bytes for %d bytes of requests, want %d", len(out), len(data), leaseRespSize*full)
		}
		anyPromise := false
		for k := 0; k < full; k++ {
			r, a := data[leaseReqSize*k:leaseReqSize*(k+1)], out[leaseRespSize*k:leaseRespSize*(k+1)]
			if !bytes.Equal(a[:8], r[:8]) {
				t.Fatalf("answer %d echoes id %x, want %x", k, a[:8], r[:8])
			}
			if got := binary.BigEndian.Uint64(a[8:16]); got != term {
				t.Fatalf("answer %d carries term %d, want %d", k, got, term)
			}
			if a[16] > 1 {
				t.Fatalf("answer %d: promised flag %d", k, a[16])
			}
			if a[16] == 1 {
				anyPromise = true
				d := time.Duration(binary.BigEndian.Uint64(r[17:25]))
				if r[8] != leaseOpPromise || binary.BigEndian.Uint64(r[9:17]) != term || term == 0 || d <= 0 || d > maxLeaseDuration {
					t.Fatalf("request %x promised", r)
				}
			}
		}
		if anyPromise && p.admitVote() && p.marker == 0 {
			t.Fatal("a promise was given with no marker on disk and votes still admitted")
		}
	})
}
