package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// The leader's side of the certificates: a certificate raises the time
// before which the leader records the standby out of sync, never lowers
// it; a stretch never records it before its start plus the timeout (an
// earlier leader's certificate); a removal stops certifying and waits out
// the latest; a new stretch starts afresh.
func TestReplicationSeen_CertificatesBoundTheOutOfSyncRecord(t *testing.T) {
	var r replicationSeen
	start := time.Now()
	r.reset(3)
	timeout := time.Second
	if got := r.outOfSyncNotBefore(timeout); got.Before(start.Add(timeout)) {
		t.Fatalf("a new stretch may record it out of sync at %v, before its start plus the timeout", got.Sub(start))
	}
	now := time.Now()
	if !r.certify(now, now.Add(3*timeout), 0) {
		t.Fatal("certify refused a certificate valid in the future")
	}
	if got := r.outOfSyncNotBefore(timeout); !got.Equal(now.Add(3 * timeout)) {
		t.Fatalf("after a certificate until +3s: not before %v", got.Sub(now))
	}
	// An earlier V (a later computation with less left) never lowers it;
	// one already past is not sent; one inside the interval neither.
	later := now.Add(10 * time.Millisecond)
	if !r.certify(later, later.Add(timeout), 0) || !r.outOfSyncNotBefore(timeout).Equal(now.Add(3*timeout)) {
		t.Fatal("a certificate with an earlier V lowered the bound")
	}
	if r.certify(later, later.Add(-time.Millisecond), 0) {
		t.Fatal("certify accepted a certificate already expired")
	}
	if r.certify(later.Add(time.Millisecond), later.Add(timeout), time.Hour) {
		t.Fatal("certify sent one within its interval")
	}
	// A removal stops certifying and returns the latest V.
	until, resume := r.stopCerts(timeout)
	if !until.Equal(now.Add(3 * timeout)) {
		t.Fatalf("stopCerts waits until %v, want the latest V", until.Sub(now))
	}
	if r.certify(later.Add(2*time.Hour), later.Add(3*time.Hour), 0) {
		t.Fatal("certify sent one while a removal waits")
	}
	resume()
	if !r.certify(later.Add(2*time.Hour), later.Add(3*time.Hour), 0) {
		t.Fatal("certify did not resume")
	}
	// A new stretch forgets its predecessor's (its start bounds them).
	r.reset(4)
	if got := r.outOfSyncNotBefore(timeout); got.After(time.Now().Add(timeout)) {
		t.Fatalf("a new stretch kept the old stretch's certificates: not before %v", time.Until(got))
	}
}

// creditCaughtUp counts an answer as progress only while the standby holds
// every entry.
func TestReplicationSeen_CreditCaughtUp(t *testing.T) {
	var r replicationSeen
	r.reset(1)
	id := raft.ServerID("dr")
	r.observe(id, 1, 10, true, true, 10, nil)
	p, _, _ := r.get(id)
	progress := p.lastProgress
	time.Sleep(2 * time.Millisecond)
	r.observe(id, 1, 0, false, true, 0, nil) // a heartbeat's answer
	r.creditCaughtUp(id, 12)                 // the leader has 12: it lacks two
	if p, _, _ = r.get(id); !p.lastProgress.Equal(progress) {
		t.Fatal("an answer of a standby lacking entries was counted as progress")
	}
	r.creditCaughtUp(id, 10)
	if p, _, _ = r.get(id); !p.lastProgress.Equal(p.lastContact) || !p.lastProgress.After(progress) {
		t.Fatal("an answer of a standby holding every entry was not counted as progress")
	}
}

// The standby keeps the latest certificate, by (in-sync index, V), on
// disk; a restart reads it back.
func TestCertStore_KeepsTheLatest_Durably(t *testing.T) {
	dir := t.TempDir()
	var s certStore
	if err := s.open(dir); err != nil {
		t.Fatal(err)
	}
	v := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, c := range []standbyCert{
		{InSyncIndex: 5, ValidUntil: v, Term: 2, Leader: "n1"},
		{InSyncIndex: 5, ValidUntil: v.Add(-time.Second), Term: 2, Leader: "n1"}, // older: kept out
		{InSyncIndex: 4, ValidUntil: v.Add(time.Hour), Term: 2, Leader: "n1"},    // an earlier record: kept out
	} {
		if err := s.accept(c); err != nil {
			t.Fatal(err)
		}
	}
	var again certStore
	if err := again.open(dir); err != nil {
		t.Fatal(err)
	}
	if c, ok := again.latest(); !ok || c.InSyncIndex != 5 || !c.ValidUntil.Equal(v) {
		t.Fatalf("after a restart: %+v %v", c, ok)
	}
	if err := s.accept(standbyCert{InSyncIndex: 9, ValidUntil: v.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if idx, until, ok, err := StandbyCertificate(dir); err != nil || !ok || idx != 9 || !until.Equal(v.Add(-time.Hour)) {
		t.Fatalf("a later record's certificate: %d %v %v %v", idx, until, ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, certFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := again.open(dir); err == nil {
		t.Fatal("a corrupt certificate file was read as none")
	}
}

// FuzzCertFrames feeds bytes from the Raft port to both ends of the
// certificate service. The standby answers every line it reads (up to the
// first over certLineMax) with one JSON answer, stores only what accept
// takes, and what it stores reads back; the leader's exchange turns any
// answer stream into an answer or an error, never more than a line read.
func FuzzCertFrames(f *testing.F) {
	v := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	good, _ := json.Marshal(standbyCert{InSyncIndex: 7, ValidUntil: v, Term: 2, Leader: "n1"})
	f.Add(append(good, '\n'))
	f.Add([]byte("{\"in_sync_index\":7}\n{not json\n\n"))
	f.Add([]byte(`{"stored":true}` + "\n"))
	f.Add([]byte(`{"error":"this node has applied the out-of-sync record"}` + "\n"))
	f.Add(bytes.Repeat([]byte("x"), certLineMax+10))
	f.Fuzz(func(t *testing.T, data []byte) {
		data = data[:min(len(data), 3*certLineMax)]
		// The standby's end.
		dir := t.TempDir()
		var store certStore
		if err := store.open(dir); err != nil {
			t.Fatal(err)
		}
		c := newFakeConn(data)
		var read int
		serveCertLines(c, func(cert standbyCert) error {
			read++
			if cert.InSyncIndex%2 == 1 {
				return store.accept(cert)
			}
			return errors.New("even index: refused")
		})
		answers := bytes.Split(bytes.TrimSuffix(c.written(), []byte("\n")), []byte("\n"))
		if len(c.written()) == 0 {
			answers = nil
		}
		stored := 0
		for i, a := range answers {
			var ans certAnswer
			if err := json.Unmarshal(a, &ans); err != nil {
				t.Fatalf("answer %d %q is not JSON: %v", i, a, err)
			}
			if ans.Stored == (ans.Error != "") {
				t.Fatalf("answer %d %+v: stored or an error, exactly one", i, ans)
			}
			if ans.Stored {
				stored++
			}
		}
		if lines := bytes.Count(data, []byte("\n")); len(answers) > lines+1 || read > len(answers) {
			t.Fatalf("%d answers, %d accepted, for %d lines", len(answers), read, lines)
		}
		if last, ok := store.latest(); ok {
			if stored == 0 || last.InSyncIndex%2 != 1 {
				t.Fatalf("stored %+v after %d stored answers", last, stored)
			}
			back, ok, err := readCert(dir)
			if err != nil || !ok || back.InSyncIndex != last.InSyncIndex || !back.ValidUntil.Equal(last.ValidUntil) {
				t.Fatalf("read back %+v %v %v, stored %+v", back, ok, err, last)
			}
		}
		// The leader's end, with data as the standby's answers.
		lc := newFakeConn(data)
		if _, err := exchangeCert(lc, lineScanner(lc), standbyCert{InSyncIndex: 7, ValidUntil: v}); err == nil && len(data) == 0 {
			t.Fatal("an exchange with no answer succeeded")
		}
		if !bytes.HasSuffix(lc.written(), []byte("\n")) || bytes.Count(lc.written(), []byte("\n")) != 1 {
			t.Fatalf("the leader wrote %q, want one line", lc.written())
		}
	})
}
