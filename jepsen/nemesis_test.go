//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/jepsen/checker"
)

func TestNemesisKinds_TableIsCompleteAndConsistent(t *testing.T) {
	groupNames, groups := kindGroups()
	// The groups --nemesis and the README document.
	if !slices.Equal(groupNames, []string{"kill", "partition", "link", "membership", "lease", "storage"}) {
		t.Errorf("groups %v, want kill, partition, link, membership, lease, storage", groupNames)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range nemesisKinds {
		switch {
		case k.name == "" || strings.ContainsAny(k.name, ", ") || strings.HasPrefix(k.name, "-"):
			t.Errorf("%q: not a name --nemesis can spell", k.name)
		case seen[k.name]:
			t.Errorf("%q: twice in the table", k.name)
		case k.name == "all" || k.name == "none" || groups[k.name] != nil:
			t.Errorf("%q: a kind named like a shorthand", k.name)
		}
		seen[k.name] = true
		if k.inject == nil {
			t.Errorf("%s: no inject", k.name)
		}
		if k.minNodes > 0 && k.fewNodes == "" {
			t.Errorf("%s: needs %d nodes but says not why", k.name, k.minNodes)
		}
		if got, ok := lookupKind(k.name); !ok || got.name != k.name {
			t.Errorf("%s: lookup gives %v %v", k.name, got, ok)
		}
		if !strings.Contains(string(readme), "`"+k.name+"`") {
			t.Errorf("%s: not in README.md's table of nemeses", k.name)
		}
	}
	// "all" is the table, in its order; every name and group parses on
	// its own.
	all, err := parseKinds("all")
	if err != nil || !slices.Equal(all, kindNames()) {
		t.Fatalf("all: %v %v, want %v", all, err, kindNames())
	}
	for _, name := range all {
		if got, err := parseKinds(name); err != nil || !slices.Equal(got, []string{name}) {
			t.Errorf("%s: %v %v", name, got, err)
		}
	}
	for g, members := range groups {
		got, err := parseKinds(g)
		if err != nil || !slices.Equal(got, slices.Sorted(slices.Values(members))) {
			t.Errorf("group %s: %v %v, want %v", g, got, err, members)
		}
	}
	var ungrouped []string
	for _, k := range nemesisKinds {
		if k.group == "" {
			ungrouped = append(ungrouped, k.name)
		}
	}
	slices.Sort(ungrouped)
	if got, err := parseKinds("all,-" + strings.Join(groupNames, ",-")); err != nil || !slices.Equal(got, ungrouped) {
		t.Errorf("all but every group: %v %v, want %v", got, err, ungrouped)
	}
}

func TestParseKinds_UnknownNameIsNamed(t *testing.T) {
	for _, arg := range []string{"kill-everything", "all,-clocks", "kill, partition-square"} {
		_, err := parseKinds(arg)
		bad := strings.TrimSpace(arg[strings.LastIndex(arg, ",")+1:])
		if err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("%q: error %v does not name %q", arg, err, bad)
		}
		if err != nil && !strings.Contains(err.Error(), "groups: kill, partition, link, membership, lease, storage;") {
			t.Errorf("%q: error %v does not list the groups", arg, err)
		}
	}
	var ev checker.Nemesis
	if err := (&nemesis{}).inject(context.Background(), "kill-everything", &ev); err == nil || !strings.Contains(err.Error(), `"kill-everything"`) {
		t.Errorf("inject of an unknown kind: %v", err)
	}
}

// netnsBackend answers netns as a process backend with or without
// per-node namespaces would; nothing else of it is used.
type netnsBackend struct {
	backend
	ok bool
}

func (b netnsBackend) storage() (*disks, error) {
	if b.ok {
		return &disks{}, nil
	}
	return nil, errNoStorageFaults
}

func (b netnsBackend) netns(*Node) (string, error) {
	if b.ok {
		return "/run/netns/tj-n1", nil
	}
	return "", errors.New("loopback")
}

func TestNemesis_Applicable_SkipsWhatTheTableSaysCannotRun(t *testing.T) {
	all := kindNames()
	for _, c := range []struct {
		nodes int
		net   bool
	}{{5, true}, {3, true}, {5, false}, {3, false}} {
		b := netnsBackend{ok: c.net}
		n1 := &Node{ID: "n1"}
		m := newNemesis(&config{Nodes: c.nodes, Nemeses: all}, &Cluster{b: b, members: []*Node{n1}}, newNetFaults(b, 1), nil, 1, t.Logf)
		got := m.applicable()
		var want []string
		for _, k := range nemesisKinds {
			why, skipped := m.skipped[k.name]
			switch {
			case k.net && !c.net:
				if why != "no network faults in this mode (loopback: run as root for per-node namespaces)" {
					t.Errorf("%s, %d nodes, no network faults: skipped %v %q", k.name, c.nodes, skipped, why)
				}
			case k.storage && !c.net:
				if why != errNoStorageFaults.Error() {
					t.Errorf("%s, %d nodes, no filesystem per node: skipped %v %q", k.name, c.nodes, skipped, why)
				}
			case c.nodes < k.minNodes:
				if why != k.fewNodes {
					t.Errorf("%s, %d nodes: skipped %v %q", k.name, c.nodes, skipped, why)
				}
			default:
				if skipped {
					t.Errorf("%s, %d nodes, network faults %v: skipped: %s", k.name, c.nodes, c.net, why)
				}
				want = append(want, k.name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d nodes, network faults %v: %v run, want %v", c.nodes, c.net, got, want)
		}
	}
	// What the table held before it was a table (issue #12).
	if k, _ := lookupKind("partition-ring"); k.minNodes != 4 || !k.net {
		t.Errorf("partition-ring: %+v", k)
	}
	for _, name := range []string{"partition-leader", "partition-halves", "partition-bridge", "partition-ring",
		"delay-leader", "loss-leader", "remove-isolated", "leader-bounce", "transfer-under-load"} {
		if k, _ := lookupKind(name); !k.net {
			t.Errorf("%s does not need network faults", name)
		}
	}
	if !needClockControl([]string{"kill-leader", "clock"}) || needClockControl([]string{"kill-leader", "partition-ring"}) {
		t.Error("clock control: only the clock kind needs it")
	}
}
