//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// levelFigures are what one concurrency level of `ticketd-bench load
// --json` measured (the fields this report uses).
type levelFigures struct {
	Concurrency        int     `json:"concurrency"`
	Requests           int     `json:"requests"`
	ReservationsPerSec float64 `json:"reservations_per_sec"`
	P50Ms              float64 `json:"p50_ms"`
	P99Ms              float64 `json:"p99_ms"`
	ErrorsTotal        int     `json:"errors_total"`
	CPU                struct {
		ServerCores  float64 `json:"server_cores"`
		ClientCores  float64 `json:"client_cores"`
		MachineCores float64 `json:"machine_busy_cores"`
	} `json:"cpu"`
}

// runLoad drives the leader with the project's load generator and reads
// its JSON. The generator's own checks (overlapping or mis-sized ranges, a
// level with no success) make it exit non-zero, which fails the run.
func runLoad(ctx context.Context, o options, dir, config string, p *primary) ([]levelFigures, error) {
	var pids []string
	for _, pid := range p.voterPIDs() {
		pids = append(pids, strconv.Itoa(pid))
	}
	levels := strings.Count(o.concurrency, ",") + 1
	bound := time.Duration(levels)*(o.warmup+o.duration) + time.Minute
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	jsonPath := filepath.Join(dir, "load.json")
	cmd := exec.CommandContext(ctx, o.bench, "load", "--target", p.leader, "--sequence", "sb",
		"--count", strconv.Itoa(o.count), "--concurrency", o.concurrency,
		"--duration", o.duration.String(), "--warmup", o.warmup.String(),
		"--label", config, "--pids", strings.Join(pids, ","), "--json", jsonPath)
	out, err := os.Create(filepath.Join(dir, "load.txt"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ticketd-bench load: %v (see %s)", err, out.Name())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return nil, err
	}
	var rep struct {
		Levels []levelFigures `json:"levels"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", jsonPath, err)
	}
	return rep.Levels, nil
}
