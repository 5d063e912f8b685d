//go:build linux

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/jepsen/checker"
)

func drOp(f, node string, outcome string, first, last, next int64, complete int64) checker.Op {
	return checker.Op{Type: "op", F: f, Node: node, Seq: "jep-a", Outcome: outcome, First: first, Last: last, Next: next, Complete: complete}
}

func TestJustifiedAdvance_AboveEverythingSeen(t *testing.T) {
	ops := []checker.Op{
		drOp(checker.FReserve, "n1", checker.OK, 1, 30_000_000, 0, 1),
		drOp(checker.FRead, "n2", checker.OK, 0, 0, 31_000_000, 2),
		// Neither an unknown outcome nor another cluster's range counts.
		drOp(checker.FReserve, "n1", checker.Unknown, 0, 0, 0, 3),
		{Type: "op", F: checker.FReserve, Cluster: "B1", Seq: "jep-a", Outcome: checker.OK, First: 1, Last: 90_000_000},
	}
	adv, why := justifiedAdvance(ops, 10_000_000)
	if adv != 31_000_001 {
		t.Fatalf("advance %d (%s), want 31000001: one above the highest read", adv, why)
	}
}

func TestJustifiedAdvance_NeverBelowTheBound(t *testing.T) {
	ops := []checker.Op{drOp(checker.FReserve, "n1", checker.OK, 1, 500, 0, 1)}
	if adv, _ := justifiedAdvance(ops, 10_000_000); adv != 10_000_000 {
		t.Fatalf("advance %d, want the bound 10000000 (ticketd promote refuses less)", adv)
	}
}

func TestPromotedFigures_OnlyThePromotedNode(t *testing.T) {
	ops := []checker.Op{
		drOp(checker.FReserve, "n1", checker.OK, 1, 10, 0, 1e9),
		drOp(checker.FReserve, drStandbyID, checker.Fail, 0, 0, 0, 2e9), // 503 while a standby
		drOp(checker.FReserve, drStandbyID, checker.OK, 20_000_000, 20_000_009, 0, 5e9),
		drOp(checker.FReserve, drStandbyID, checker.OK, 20_000_010, 20_000_010, 0, 4e9),
	}
	f := promotedFigures(ops, drStandbyID)
	if f.Ranges != 2 || f.IDs != 11 || f.FirstMs != 4000 {
		t.Fatalf("figures %+v, want 2 ranges, 11 IDs, first at 4000 ms", f)
	}
}

func TestSplitPromoteFault(t *testing.T) {
	serve, promote := splitPromoteFault("skip-verify, promote-without-advance")
	if serve != "skip-verify" || promote != "promote-without-advance" {
		t.Fatalf("split %q, %q", serve, promote)
	}
	if serve, promote := splitPromoteFault(""); serve != "" || promote != "" {
		t.Fatalf("split of nothing: %q, %q", serve, promote)
	}
}

func TestDRFlags(t *testing.T) {
	base := func() config {
		c := config{Nodes: 3, TimeLimit: 40 * time.Second, FaultMin: time.Second, FaultMax: 2 * time.Second, Schedule: "cycle",
			Net: "auto", RawWorkers: 1, OpTimeout: time.Second, LeaseHold: time.Second, DR: true, DRDisaster: "in-sync",
			DRStandbyTimeout: time.Second, DRAfter: 10 * time.Second}
		c.drWorkload()
		return c
	}
	c := base()
	if err := c.validate(); err != nil {
		t.Fatalf("a valid DR config refused: %v", err)
	}
	if c.Migration || c.RaiseWorkers != 0 || c.SDKWorkers != 0 || c.ServerSnowflakeWorkers != 0 {
		t.Fatalf("drWorkload left workers on: %+v", c)
	}
	for name, mod := range map[string]func(*config){
		"disaster":   func(c *config) { c.DRDisaster = "sometimes" },
		"short":      func(c *config) { c.TimeLimit = 15 * time.Second },
		"docker":     func(c *config) { c.Docker = true },
		"plant only": func(c *config) { c.DR, c.Faults = false, "promote-keeps-leases" },
	} {
		c := base()
		mod(&c)
		if err := c.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := checkDRKinds([]string{"kill-leader", "member-add"}); err == nil || !strings.Contains(err.Error(), "member-add") {
		t.Fatalf("checkDRKinds let member-add through: %v", err)
	}
}
