package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
)

// BenchmarkApply_ThreeNodes measures commit throughput of a real 3-node
// cluster (fsynced bolt logs, loopback TCP) with pipelined replication off
// (MaxRPCsInFlight 1, the default) and on (2, 8), for one proposer and for
// 16: the figure behind the choice in DESIGN.md, "Pipelined replication".
//
//	go test -run '^$' -bench BenchmarkApply_ThreeNodes -benchtime 3s ./cluster
func BenchmarkApply_ThreeNodes(b *testing.B) {
	for _, inflight := range []int{1, 2, 8} {
		for _, proposers := range []int{1, 16} {
			b.Run(fmt.Sprintf("inflight=%d/proposers=%d", inflight, proposers), func(b *testing.B) {
				nodes := startNodesWith(b, 3, raceTimings, func(c *Config) { c.MaxRPCsInFlight = inflight })
				cmd := fsm.EncodeSetMember(fsm.SetMember{ID: "bench", RaftAddr: "127.0.0.1:1"})
				leader := applyEventually(b, nodes, cmd, 20*time.Second)
				b.ResetTimer()
				var wg sync.WaitGroup
				var mu sync.Mutex
				var firstErr error
				per := (b.N + proposers - 1) / proposers
				for p := 0; p < proposers; p++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < per; i++ {
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
							_, err := leader.Apply(ctx, cmd)
							cancel()
							if err != nil {
								mu.Lock()
								firstErr = err
								mu.Unlock()
								return
							}
						}
					}()
				}
				wg.Wait()
				if firstErr != nil {
					b.Fatal(firstErr)
				}
				b.ReportMetric(float64(per*proposers)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}
