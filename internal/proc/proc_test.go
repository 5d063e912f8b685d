//go:build unix

package proc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sh starts `/bin/sh -c script` logging to a file in a temporary folder.
func sh(t *testing.T, script string, mod ...func(*Spec)) *Process {
	t.Helper()
	s := Spec{Path: "/bin/sh", Args: []string{"-c", script}, Log: filepath.Join(t.TempDir(), "logs", "run1.log")}
	for _, m := range mod {
		m(&s)
	}
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Signal(syscall.SIGKILL)
		<-p.Done()
	})
	return p
}

func TestProcess_Exits_StatusAndLogKept(t *testing.T) {
	p := sh(t, "echo out; echo err >&2; exit 3")
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Fatal("alive after it exited")
	}
	if st := p.State(); st == nil || st.ExitCode() != 3 || st.String() != "exit status 3" {
		t.Fatalf("state %v, want exit status 3", st)
	}
	if got := p.Log(); got != "out\nerr\n" {
		t.Fatalf("log %q, want stdout and stderr", got)
	}
	if filepath.Base(p.LogPath()) != "run1.log" {
		t.Fatalf("log path %s", p.LogPath())
	}
}

func TestProcess_SIGTERM_ReportsSignal(t *testing.T) {
	p := sh(t, "exec sleep 30")
	if p.State() != nil || !p.Alive() {
		t.Fatal("not running after Start")
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st := p.State(); st.ExitCode() != -1 || st.String() != "signal: terminated" {
		t.Fatalf("state %v, want killed by SIGTERM", st)
	}
	if err := p.Signal(syscall.SIGKILL); err == nil {
		t.Fatal("signalling an exited process succeeded")
	}
}

func TestProcess_StoppedIsAlive_WaitTimesOut(t *testing.T) {
	p := sh(t, "exec sleep 30")
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := p.Wait(100 * time.Millisecond)
	if !errors.Is(err, ErrTimeout) || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("Wait on a stopped process: %v after %v, want ErrTimeout after 100ms", err, time.Since(start))
	}
	if !p.Alive() || p.State() != nil {
		t.Fatal("a stopped process is not alive")
	}
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := p.State().String(); got != "signal: killed" {
		t.Fatalf("state %q, want signal: killed", got)
	}
}

func TestProcess_Tail_LastLines(t *testing.T) {
	p := sh(t, "for i in 1 2 3 4 5; do echo line$i; done")
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := p.Tail(2); !slices.Equal(got, []string{"line4", "line5"}) {
		t.Fatalf("Tail(2) = %q", got)
	}
	if got := p.Tail(0); len(got) != 5 {
		t.Fatalf("Tail(0) = %q, want all 5 lines", got)
	}
	if got := sh(t, "true").Tail(3); len(got) != 0 {
		t.Fatalf("Tail of an empty log = %q", got)
	}
}

func TestStart_EnvWithoutTICKETD_DirPrefixHeader(t *testing.T) {
	t.Setenv("TICKETD_LEAK", "yes")
	t.Setenv("PROC_KEEP", "kept")
	dir := t.TempDir()
	p := sh(t, `echo "leak=$TICKETD_LEAK keep=$PROC_KEEP set=$TICKETD_SET pwd=$(pwd)"`, func(s *Spec) {
		s.Env = []string{"TICKETD_SET=on"}
		s.Dir = dir
		s.Prefix = []string{"env"} // execs its argument, as `ip netns exec` does
		s.Header = true
		s.OwnGroup = true
	})
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{`# /bin/sh -c echo "leak=$TICKETD_LEAK keep=$PROC_KEEP set=$TICKETD_SET pwd=$(pwd)"`,
		"leak= keep=kept set=on pwd=" + dir}
	if got := p.Tail(0); !slices.Equal(got, want) {
		t.Fatalf("log\n%q\nwant\n%q", got, want)
	}
	if st := p.State(); !st.Success() {
		t.Fatalf("state %v", st)
	}
}

func TestStart_Errors(t *testing.T) {
	if _, err := Start(Spec{Path: "/bin/sh"}); err == nil {
		t.Fatal("Start without a log file succeeded")
	}
	if _, err := Start(Spec{Path: filepath.Join(t.TempDir(), "missing"), Log: filepath.Join(t.TempDir(), "l")}); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
}

func TestChildEnv_DropsTICKETD(t *testing.T) {
	t.Setenv("TICKETD_HTTP_ADDR", "x")
	for _, kv := range ChildEnv() {
		if strings.HasPrefix(kv, "TICKETD_") {
			t.Fatalf("ChildEnv kept %s", kv)
		}
	}
}

func TestFreeAddrs_DistinctLoopback(t *testing.T) {
	addrs, err := FreeAddrs(6)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 6 {
		t.Fatalf("%d addresses, want 6", len(addrs))
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if !strings.HasPrefix(a, "127.0.0.1:") || seen[a] {
			t.Fatalf("bad or repeated address %s in %v", a, addrs)
		}
		seen[a] = true
	}
}

func TestModuleRoot_FindsRootFromSubfolder(t *testing.T) {
	root, err := ModuleRoot() // go test runs in internal/proc
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Fatalf("root %s, want %s", root, want)
	}
}
