package respapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	mrserver "github.com/alicebob/miniredis/v2/server"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/respapi"
)

// counterStore answers reservations from an in-memory counter: the
// benchmark measures the protocol layer alone, not the cluster.
type counterStore struct{ next atomic.Int64 }

func (s *counterStore) ID() string                             { return "bench" }
func (s *counterStore) Serving() bool                          { return true }
func (s *counterStore) LeaderHTTPAddr() (string, string, bool) { return "bench", "", true }
func (s *counterStore) Reserve(_ context.Context, _ string, n int64) (int64, int64, error) {
	last := s.next.Add(n)
	return last - n + 1, last, nil
}
func (s *counterStore) Sequence(context.Context, string) (domain.Sequence, error) {
	return domain.Sequence{}, domain.ErrNotFound
}
func (s *counterStore) CreateSequence(context.Context, domain.SequenceSettings) (domain.Sequence, bool, error) {
	return domain.Sequence{}, false, nil
}
func (s *counterStore) Status() (domain.ClusterStatus, error) { return domain.ClusterStatus{}, nil }
func (s *counterStore) SequenceCount() int                    { return 1 }

// SnowflakeIDs hands out the counter's next count values, as a generator's
// strictly increasing IDs.
func (s *counterStore) SnowflakeIDs(_ context.Context, ns string, count int) (domain.SnowflakeIDs, error) {
	last := s.next.Add(int64(count))
	ids := make([]int64, count)
	for i := range ids {
		ids[i] = last - int64(count) + 1 + int64(i)
	}
	return domain.SnowflakeIDs{Namespace: ns, Node: "bench", WorkerID: 1, IDs: ids}, nil
}

// BenchmarkPipeline compares this package's RESP server with
// github.com/alicebob/miniredis/v2/server, the one RESP server library the
// module proxy serves, on the same work: INCRBY of an in-memory counter,
// one connection, P commands sent before the answers are read. It is the
// benchmark the parser was chosen by (resp's package comment).
func BenchmarkPipeline(b *testing.B) {
	servers := map[string]func(b *testing.B) string{
		"ticketd": func(b *testing.B) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := respapi.New(respapi.Config{Store: &counterStore{}})
			go func() { _ = srv.Serve(ln) }()
			b.Cleanup(srv.Close)
			return ln.Addr().String()
		},
		"miniredis": func(b *testing.B) string {
			srv, err := mrserver.NewServer("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var mu sync.Mutex
			var next int64
			if err := srv.Register("INCRBY", func(c *mrserver.Peer, _ string, args []string) {
				n, _ := strconv.ParseInt(args[1], 10, 64)
				mu.Lock()
				next += n
				v := next
				mu.Unlock()
				c.WriteInt(int(v))
			}); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Close)
			return srv.Addr().String()
		},
	}
	for _, name := range []string{"ticketd", "miniredis"} {
		for _, p := range []int{1, 16} {
			b.Run(fmt.Sprintf("server=%s/P=%d", name, p), func(b *testing.B) {
				addr := servers[name](b)
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				cmd := []byte("*3\r\n$6\r\nINCRBY\r\n$6\r\norders\r\n$4\r\n1000\r\n")
				var batch []byte
				for range p {
					batch = append(batch, cmd...)
				}
				r := bufio.NewReader(conn)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += p {
					if _, err := conn.Write(batch); err != nil {
						b.Fatal(err)
					}
					for range p {
						line, err := r.ReadSlice('\n')
						if err != nil {
							b.Fatal(err)
						}
						if line[0] != ':' {
							b.Fatalf("answer %q", line)
						}
					}
				}
				b.StopTimer()
				_, _ = io.WriteString(conn, "QUIT\r\n")
			})
		}
	}
}
