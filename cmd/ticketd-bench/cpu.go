package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU accounting from /proc, so that a result says not only how fast a
// system was but what it cost and whether the machine was saturated: on a
// small machine the load generator, the servers and whatever else runs all
// share the same cores. Linux only; elsewhere every figure is zero.

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuSample is one reading of the CPU time used so far.
type cpuSample struct {
	at      time.Time
	server  map[int]uint64 // pid -> utime+stime ticks, pids and their descendants
	client  uint64         // this process
	busy    uint64         // whole machine, ticks not idle
	machine bool           // busy is valid
}

// cpuUse is what a level cost, in cores (CPU seconds per second).
type cpuUse struct {
	ServerCores  float64 `json:"server_cores"`
	ClientCores  float64 `json:"client_cores"`
	MachineCores float64 `json:"machine_busy_cores"`
}

// procTicks returns utime+stime of pid in clock ticks.
func procTicks(pid int) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	return parseStatTicks(b)
}

// parseStatTicks reads fields 14 and 15 (utime, stime) of a /proc/<pid>/stat
// line. The command name (field 2) may contain spaces and parentheses, so
// fields are counted from the last ')'.
func parseStatTicks(b []byte) (uint64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 -> f[11], stime f[12].
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + s, true
}

// parseStatPPID reads field 4 (ppid) of a /proc/<pid>/stat line.
func parseStatPPID(b []byte) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	p, err := strconv.Atoi(f[1])
	return p, err == nil
}

// withDescendants returns pids and every process descending from them
// (PostgreSQL serves each connection from a child process).
func withDescendants(pids []int) []int {
	if len(pids) == 0 {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return pids
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if pp, ok := parseStatPPID(b); ok {
			children[pp] = append(children[pp], pid)
		}
	}
	seen := map[int]bool{}
	out := []int{}
	queue := append([]int(nil), pids...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		queue = append(queue, children[p]...)
	}
	return out
}

// machineBusy returns the ticks the whole machine spent not idle.
func machineBusy() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var busy uint64
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, false
		}
		// user nice system idle iowait irq softirq steal [guest...]:
		// guest time is already in user, so only the first 8 count.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += v
	}
	return busy, true
}

func sampleCPU(pids []int) cpuSample {
	s := cpuSample{at: time.Now(), server: map[int]uint64{}}
	for _, p := range withDescendants(pids) {
		if t, ok := procTicks(p); ok {
			s.server[p] = t
		}
	}
	s.client, _ = procTicks(os.Getpid())
	s.busy, s.machine = machineBusy()
	return s
}

// cpuBetween is the use between two samples. A server process counts only
// if it appears in both (one that started or ended in between is missed,
// which is why connections are made before the window opens).
func cpuBetween(a, b cpuSample) cpuUse {
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return cpuUse{}
	}
	var server uint64
	for p, t1 := range b.server {
		if t0, ok := a.server[p]; ok && t1 >= t0 {
			server += t1 - t0
		}
	}
	u := cpuUse{
		ServerCores: float64(server) / clockTicks / secs,
		ClientCores: float64(b.client-a.client) / clockTicks / secs,
	}
	if a.machine && b.machine && b.busy >= a.busy {
		u.MachineCores = float64(b.busy-a.busy) / clockTicks / secs
	}
	return u
}
