package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// mountSmallTmpfs mounts a tmpfs of size bytes at dir, unmounted when the
// test ends (after the cluster, whose cleanup is registered later). It needs
// root; without it the test is skipped.
func mountSmallTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small filesystem for the data directory")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0750", size)); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// fillUp writes a file in dir until its filesystem has no space left, and
// returns the file's path. Bounded by limit bytes.
func fillUp(t *testing.T, dir string, limit int) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for written := 0; written < limit; written += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatal(err)
		}
	}
	t.Fatalf("wrote %d bytes into %s without filling it", limit, dir)
	return ""
}

// TestStorage_FollowerCannotAppend_NotReadyUntilItCatchesUp: a node whose
// filesystem is full fails every append the leader sends it. hashicorp/raft
// only logs that; the node kept answering /readyz 200 while falling ever
// further behind (issue #19). It must answer 503 naming the storage failure,
// and become ready again on its own once space comes back.
func TestStorage_FollowerCannotAppend_NotReadyUntilItCatchesUp(t *testing.T) {
	const size = 24 << 20
	tc := testcluster.NewWithOptions(t, 3, testcluster.Options{Tweak: func(id string, cfg *server.Config) {
		if id == "n3" {
			mountSmallTmpfs(t, cfg.Cluster.DataDir, size)
		}
	}})
	full := tc.Node("n3")
	kit := tc.Client()
	readyz := func() (int, string) {
		r, err := kit.Call(http.MethodGet, tc.URL(full)+"/readyz", nil)
		if err != nil {
			return 0, err.Error()
		}
		return r.Status, string(r.Body)
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("n3 not ready before the fault: %d %s", code, body)
	}

	filler := fillUp(t, full.Dir, size)
	// Every create is a log entry for n3 to append. The entries carry
	// nothing large; bolt grows raft.db in steps, so a few hundred reach
	// the point where n3's next write needs a page it cannot get.
	leader := func() string { return tc.URL(tc.Leader(10 * time.Second)) }
	created := 0
	create := func() {
		name := fmt.Sprintf("s%05d", created)
		created++
		_, _ = kit.Do(http.MethodPut, leader()+"/v1/sequences/"+name, nil, nil)
	}
	var body string
	testkit.EventuallyErr(t, 60*time.Second, time.Millisecond, "n3 to report that it cannot write its log", func() error {
		for range 20 {
			create()
		}
		code, b := readyz()
		body = b
		if code == http.StatusServiceUnavailable && strings.Contains(b, "cannot write to its Raft log") {
			return nil
		}
		return fmt.Errorf("after %d creates n3 answers %d %s", created, code, b)
	})
	if !strings.Contains(body, "no_space") {
		t.Errorf("readiness does not name the kind of failure: %s", body)
	}
	t.Logf("n3 not ready after %d creates: %s", created, body)

	// Its lag grows with every entry the cluster commits without it,
	// though its own commit index (capped at its last entry) says it is
	// caught up.
	lagBefore := scrapeGauge(t, kit, tc.URL(full), "ticketd_raft_lag_entries")
	for range 200 {
		create()
	}
	testkit.EventuallyErr(t, 10*time.Second, 20*time.Millisecond, "n3's lag to grow by the entries it missed", func() error {
		if lag := scrapeGauge(t, kit, tc.URL(full), "ticketd_raft_lag_entries"); lag < lagBefore+150 {
			return fmt.Errorf("lag %v, was %v before 200 more creates", lag, lagBefore)
		}
		return nil
	})
	if healthy := scrapeGauge(t, kit, tc.URL(full), "ticketd_storage_healthy"); healthy != 0 {
		t.Errorf("ticketd_storage_healthy = %v on the full node", healthy)
	}
	// The cluster view of the full node says the same, and why.
	var st api.ClusterStatus
	if code, err := kit.Do(http.MethodGet, tc.URL(full)+"/v1/cluster", nil, &st); err != nil || code != http.StatusOK {
		t.Fatalf("/v1/cluster of n3: %d %v", code, err)
	}
	if st.Ready || !strings.Contains(st.NotReady, "cannot write") || st.Storage.Healthy || st.Storage.ErrorKind != "no_space" ||
		!strings.Contains(st.Storage.Error, "no space left") || st.Storage.FailingForMs < 0 || st.LagEntries < 150 {
		t.Errorf("/v1/cluster of the full n3: ready %v (%q), lag %d, storage %+v", st.Ready, st.NotReady, st.LagEntries, st.Storage)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyErr(t, 60*time.Second, 50*time.Millisecond, "n3 to be ready again once it has space", func() error {
		create() // the leader retries n3's appends on its own; this only keeps the log moving
		if code, b := readyz(); code != http.StatusOK {
			return fmt.Errorf("n3 answers %d %s", code, b)
		}
		return nil
	})
	if lag := scrapeGauge(t, kit, tc.URL(full), "ticketd_raft_lag_entries"); lag > float64(server.DefaultConfig().MaxReadyLag) {
		t.Errorf("n3 ready with a lag of %v entries", lag)
	}
}

// scrapeGauge reads one unlabelled sample from a node's /metrics.
func scrapeGauge(t *testing.T, kit testkit.Client, base, name string) float64 {
	t.Helper()
	body := string(kit.MustCall(t, http.MethodGet, base+"/metrics", nil).Body)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return f
		}
	}
	t.Fatalf("%s not in %s/metrics", name, base)
	return 0
}
