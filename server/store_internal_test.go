package server

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/issuer"
)

// The kind every sentinel of the layers below the store must get. The HTTP
// layer decides status and problem type by these kinds alone.
var wantKinds = map[string]struct {
	err  error
	kind error
}{
	"fsm.ErrSequenceNotFound":      {fsm.ErrSequenceNotFound, domain.ErrNotFound},
	"fsm.ErrNamespaceNotFound":     {fsm.ErrNamespaceNotFound, domain.ErrNotFound},
	"cluster.ErrMemberNotFound":    {cluster.ErrMemberNotFound, domain.ErrNotFound},
	"fsm.ErrSequenceExhausted":     {fsm.ErrSequenceExhausted, domain.ErrExhausted},
	"fsm.ErrSequenceConflict":      {fsm.ErrSequenceConflict, domain.ErrConflict},
	"fsm.ErrNamespaceConflict":     {fsm.ErrNamespaceConflict, domain.ErrConflict},
	"fsm.ErrClusterNotEmpty":       {fsm.ErrClusterNotEmpty, domain.ErrConflict},
	"cluster.ErrMemberConflict":    {cluster.ErrMemberConflict, domain.ErrConflict},
	"fsm.ErrInvalidCommand":        {fsm.ErrInvalidCommand, domain.ErrInvalid},
	"fsm.ErrBackupInvalid":         {fsm.ErrBackupInvalid, domain.ErrInvalid},
	"cluster.ErrMemberUnreachable": {cluster.ErrMemberUnreachable, domain.ErrInvalid},
	"fsm.ErrNoWorkerFree":          {fsm.ErrNoWorkerFree, domain.ErrNoWorkerFree},
	"fsm.ErrLeaseLost":             {fsm.ErrLeaseLost, domain.ErrLeaseLost},
	"fsm.ErrWorkerUnavailable":     {fsm.ErrWorkerUnavailable, domain.ErrWorkerUnavailable},
	"cluster.ErrClusterUpgrading":  {cluster.ErrClusterUpgrading, domain.ErrClusterUpgrading},
	"cluster.ErrNotLeader":         {cluster.ErrNotLeader, domain.ErrUnavailable},
	"cluster.ErrLeadershipLost":    {cluster.ErrLeadershipLost, domain.ErrUnavailable},
	"cluster.ErrNotConfirmed":      {cluster.ErrNotConfirmed, domain.ErrUnavailable},
	"cluster.ErrTimeout":           {cluster.ErrTimeout, domain.ErrUnavailable},
	"cluster.ErrShutdown":          {cluster.ErrShutdown, domain.ErrUnavailable},
	"issuer.ErrNotServing":         {issuer.ErrNotServing, domain.ErrUnavailable},
	"issuer.ErrStaleLeadership":    {issuer.ErrStaleLeadership, domain.ErrUnavailable},
	"issuer.ErrContended":          {issuer.ErrContended, domain.ErrUnavailable},
	"fsm.ErrStandbyConflict":       {fsm.ErrStandbyConflict, domain.ErrConflict},
	"fsm.ErrNoStandby":             {fsm.ErrNoStandby, domain.ErrNotFound},
	"fsm.ErrFenced":                {fsm.ErrFenced, domain.ErrUnavailable},
}

// Sentinels that never reach the store, and why.
var noKind = map[string]string{
	"fsm.ErrLeaseTimerStale":   "a lessor timer's entry that lost a race; only the lessor sees it",
	"cluster.ErrStorage":       "a data directory the node refuses to start on; only cluster.Open returns it",
	"fsm.ErrNotStandby":        "a promotion refused; only the offline ticketd promote sees it",
	"fsm.ErrAlreadyPromoted":   "a promotion refused; only the offline ticketd promote sees it",
	"fsm.ErrStandbyNotInSync":  "a promotion refused; only the offline ticketd promote sees it",
	"fsm.ErrAdvanceTooSmall":   "a promotion refused; only the offline ticketd promote sees it",
	"cluster.ErrPromote":       "a promotion refused; only the offline ticketd promote sees it",
	"cluster.ErrPrimaryLostAt": "a promotion refused; only the offline ticketd promote sees it",
}

var allKinds = []error{domain.ErrInvalid, domain.ErrNotFound, domain.ErrConflict, domain.ErrExhausted,
	domain.ErrNoWorkerFree, domain.ErrLeaseLost, domain.ErrWorkerUnavailable, domain.ErrUnavailable, domain.ErrClusterUpgrading}

// TestStore_EverySentinelHasAKind: each exported Err* of fsm, cluster and
// issuer (read from their sources, so a new one cannot be forgotten) maps,
// wrapped as the layers wrap them, to exactly its kind, keeps its own
// identity and message; an unknown error gets no kind (a 500).
func TestStore_EverySentinelHasAKind(t *testing.T) {
	for _, pkg := range []string{"fsm", "cluster", "issuer"} {
		for _, name := range exportedSentinels(t, filepath.Join("..", pkg)) {
			full := pkg + "." + name
			if _, ok := noKind[full]; ok {
				continue
			}
			if _, ok := wantKinds[full]; !ok {
				t.Errorf("%s has no kind: add it to errorKinds (and to wantKinds here), or to noKind with the reason it never reaches the store", full)
			}
		}
	}
	for name, w := range wantKinds {
		err := kindOf(fmt.Errorf("doing something: %w", w.err))
		for _, k := range allKinds {
			if got, want := errors.Is(err, k), k == w.kind; got != want {
				t.Errorf("%s: errors.Is(kindOf(err), %v) = %v, want %v", name, k, got, want)
			}
		}
		if !errors.Is(err, w.err) || !strings.Contains(err.Error(), w.err.Error()) {
			t.Errorf("%s: kindOf lost the error itself: %v", name, err)
		}
	}
	unknown := errors.New("disk on fire")
	if err := kindOf(unknown); err != unknown {
		t.Errorf("an unknown error got a kind: %v", err)
	}
	if kindOf(nil) != nil {
		t.Error("kindOf(nil) is not nil")
	}
}

// exportedSentinels lists the package-level exported variables named Err*
// in the non-test Go files of dir.
func exportedSentinels(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(id.Name, "Err") && id.IsExported() {
						names = append(names, id.Name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no sentinels found in %s", dir)
	}
	return names
}
