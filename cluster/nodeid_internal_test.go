package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A node-id file a crash left empty names nobody: the node starts and
// writes it again (CI's disk-readonly nemesis left one, and n2 refused to
// start: "holds the data of node \"\""). Another node's id is refused.
func TestEnsureNodeID_EmptyFileRewritten_OtherIDRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, nodeIDFile)
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := ensureNodeID(dir, "n2"); err != nil {
		t.Fatalf("empty node-id file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "n2\n" {
		t.Fatalf("node-id file holds %q", b)
	}
	if err := ensureNodeID(dir, "n3"); !errors.Is(err, ErrStorage) {
		t.Fatalf("another node's data: %v", err)
	}
}
