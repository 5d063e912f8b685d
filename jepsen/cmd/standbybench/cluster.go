//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/proc"
)

// Ports of the voters (n1..n3: base+1..base+3) and of the standby (base+4).
const (
	httpBase = 19180
	raftBase = 19190
	standbyN = 4
)

// primary is one fresh 3-node cluster, with or without its standby, for
// one measured run. Every run starts from empty data dirs, so each
// configuration meets the same starting state.
type primary struct {
	bin, dir string
	voters   []*proc.Process
	standby  *proc.Process
	leader   string // the leader's base URL
	client   *http.Client
}

func voterHTTP(i int) string { return fmt.Sprintf("%s:%d", hostIP, httpBase+i) }
func voterRaft(i int) string { return fmt.Sprintf("%s:%d", hostIP, raftBase+i) }

// startPrimary starts n1..n3 and waits until they agree on a leader.
func startPrimary(ctx context.Context, bin, dir string) (*primary, error) {
	p := &primary{bin: bin, dir: dir, client: &http.Client{Timeout: 3 * time.Second}}
	var initial []string
	for i := 1; i <= 3; i++ {
		initial = append(initial, fmt.Sprintf("n%d=%s", i, voterRaft(i)))
	}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
		pr, err := proc.Start(proc.Spec{
			Path: bin, Log: filepath.Join(dir, "logs", id+".log"), Header: true, OwnGroup: true,
			Args: []string{"serve", "--dev", "--id", id, "--data-dir", filepath.Join(dir, id),
				"--http-addr", voterHTTP(i), "--raft-addr", voterRaft(i),
				"--initial-cluster", strings.Join(initial, ",")},
		})
		if err != nil {
			p.stop()
			return nil, err
		}
		p.voters = append(p.voters, pr)
	}
	if err := p.waitLeader(ctx, 30*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// waitLeader polls every voter until all are ready and name one leader.
func (p *primary) waitLeader(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var why error
	for time.Now().Before(deadline) {
		if why = p.leaderOnce(ctx); why == nil {
			return nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("no agreed leader after %s: %w", timeout, why)
}

func (p *primary) leaderOnce(ctx context.Context) error {
	leader := ""
	for i := 1; i <= 3; i++ {
		if p.voters[i-1].State() != nil {
			return fmt.Errorf("n%d exited (%s); see %s", i, p.voters[i-1].State(), p.voters[i-1].LogPath())
		}
		var cs api.ClusterStatus
		if err := p.getJSON(ctx, "http://"+voterHTTP(i)+"/v1/cluster", &cs); err != nil {
			return err
		}
		if !cs.Ready || cs.Leader == "" {
			return fmt.Errorf("n%d: not ready (%s), leader %q", i, cs.NotReady, cs.Leader)
		}
		if leader != "" && leader != cs.Leader {
			return fmt.Errorf("voters disagree on the leader (%s, %s)", leader, cs.Leader)
		}
		leader = cs.Leader
	}
	n, err := strconv.Atoi(strings.TrimPrefix(leader, "n"))
	if err != nil || n < 1 || n > 3 {
		return fmt.Errorf("leader %q is not a voter", leader)
	}
	p.leader = "http://" + voterHTTP(n)
	return nil
}

// addStandby starts the standby (inside the namespace when prefix is set)
// joining through every voter, and waits until the leader records it in
// sync: before that the leader waits for nothing, and the run would
// measure the fast path.
func (p *primary) addStandby(ctx context.Context, prefix []string, httpAddr, raftAddr string) error {
	var joins []string
	for i := 1; i <= 3; i++ {
		joins = append(joins, "http://"+voterHTTP(i))
	}
	pr, err := proc.Start(proc.Spec{
		Prefix: prefix, Path: p.bin, Log: filepath.Join(p.dir, "logs", "standby.log"), Header: true, OwnGroup: true,
		Args: []string{"serve", "--dev", "--id", "sb", "--data-dir", filepath.Join(p.dir, "sb"),
			"--http-addr", httpAddr, "--raft-addr", raftAddr,
			"--join", strings.Join(joins, ","), "--standby"},
	})
	if err != nil {
		return err
	}
	p.standby = pr
	deadline := time.Now().Add(45 * time.Second)
	for {
		sb, err := p.standbyStatus(ctx)
		if err == nil && sb != nil && sb.State == api.StandbyInSync {
			return nil
		}
		if p.standby.State() != nil {
			return fmt.Errorf("standby exited (%s); see %s", p.standby.State(), p.standby.LogPath())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("standby not in sync after 45s (status %+v, err %v)", sb, err)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// standbyStatus is the leader's view of the standby (nil when none).
func (p *primary) standbyStatus(ctx context.Context) (*api.StandbyStatus, error) {
	var cs api.ClusterStatus
	if err := p.getJSON(ctx, p.leader+"/v1/cluster", &cs); err != nil {
		return nil, err
	}
	if cs.State != "Leader" && !strings.EqualFold(cs.State, "leader") {
		return nil, fmt.Errorf("%s is no longer the leader (state %s, leader %s)", p.leader, cs.State, cs.Leader)
	}
	return cs.Standby, nil
}

// metrics is the leader's /metrics text.
func (p *primary) metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.leader+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	return string(b), nil
}

func (p *primary) getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return json.Unmarshal(b, out)
}

// voterPIDs are the voters' process ids, for the load generator's CPU
// figures.
func (p *primary) voterPIDs() []int {
	var out []int
	for i := 1; i <= 3; i++ {
		if pid := childPID(filepath.Join(p.dir, fmt.Sprintf("n%d", i))); pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// childPID finds the child of this process started with --data-dir dir.
// proc.Process does not expose its PID; the data dir names one node.
func childPID(dir string) int {
	ents, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != me {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(cmdline, []byte("\x00--data-dir\x00"+dir+"\x00")) {
			return pid
		}
	}
	return 0
}

// stop ends every process (SIGTERM, then SIGKILL after 10 s).
func (p *primary) stop() {
	all := append([]*proc.Process{p.standby}, p.voters...)
	for _, pr := range all {
		if pr != nil && pr.Alive() {
			_ = pr.Signal(syscall.SIGTERM)
		}
	}
	for _, pr := range all {
		if pr == nil {
			continue
		}
		if err := pr.Wait(10 * time.Second); errors.Is(err, proc.ErrTimeout) {
			_ = pr.Signal(syscall.SIGKILL)
			_ = pr.Wait(5 * time.Second)
		}
	}
}

// cpuSeconds is the CPU time (user+system) process pid has used.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// The command name may hold spaces: the fields start after its ')'.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
