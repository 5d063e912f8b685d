//go:build ticketd_faults

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/server"
)

// This file is compiled only with -tags ticketd_faults: the binary the
// fault-injection suite uses to show that it catches each planted bug. A
// production build has no --unsafe-fault flag at all.

const faultsBuild = true

func registerFaultFlag(fs *flag.FlagSet) *string {
	return fs.String("unsafe-fault", "", "TEST ONLY: plant bugs, comma-separated: serve-uncommitted, skip-barrier, skip-verify, keep-blocks, raise-no-cut, raise-cut-by-caller, restore-skip-empty-check, reuse-lease-tokens, skip-acquire-idempotency, lease-wall-clock-expiry, grouped-blocks-ignore-level, snowflake-serve-after-lease, snowflake-ignore-floor, standby-no-wait, standby-trust-receipt, promoted-refuse-recorded-only, lease-forget-promise, lease-serve-past-expiry, lease-kept-across-transfer, lease-clock-drift; for ticketd promote: promote-without-advance, promote-keeps-leases")
}

func applyFaults(spec string, cfg *server.Config) error {
	installClockControl(cfg)
	if spec == "" {
		return nil
	}
	for _, f := range strings.Split(spec, ",") {
		switch strings.TrimSpace(f) {
		case "serve-uncommitted":
			cfg.Issuer.Unsafe.ServeUncommitted = true
		case "skip-barrier":
			cfg.Cluster.UnsafeSkipBarrier = true
		case "skip-verify":
			cfg.Issuer.Unsafe.SkipVerify = true
		case "keep-blocks":
			cfg.Issuer.Unsafe.KeepBlocks = true
		case "raise-no-cut":
			cfg.Issuer.Unsafe.RaiseNoCut = true
		case "raise-cut-by-caller":
			cfg.UnsafeRaiseCutByCaller = true
		case "restore-skip-empty-check":
			cfg.UnsafeFSM.RestoreSkipEmptyCheck = true
		case "reuse-lease-tokens":
			cfg.UnsafeFSM.ReuseLeaseTokens = true
		case "skip-acquire-idempotency":
			cfg.UnsafeFSM.SkipAcquireIdempotency = true
		case "lease-wall-clock-expiry":
			cfg.UnsafeFSM.WallClockLeaseExpiry = true
		case "grouped-blocks-ignore-level":
			cfg.Cluster.UnsafeGroupedBlocksIgnoreLevel = true
		case "snowflake-serve-after-lease":
			cfg.UnsafeSnowflake.ServeAfterLeaseEnd = true
		case "snowflake-ignore-floor":
			cfg.UnsafeSnowflake.IgnoreTimestampFloor = true
		case "standby-no-wait":
			cfg.Cluster.UnsafeStandbyNoWait = true
		case "standby-trust-receipt":
			cfg.Cluster.UnsafeStandbyTrustReceipt = true
		case "promoted-refuse-recorded-only":
			cfg.Cluster.UnsafeRefuseRecordedOnly = true
		case "lease-forget-promise":
			cfg.Cluster.UnsafeLeaseForgetPromise = true
		case "lease-serve-past-expiry":
			cfg.Cluster.UnsafeLeaseServePastExpiry = true
		case "lease-kept-across-transfer":
			cfg.Cluster.UnsafeLeaseKeptAcrossTransfer = true
		case "lease-clock-drift":
			cfg.Cluster.UnsafeLeaseClockRate = 0.25
		default:
			return fmt.Errorf("--unsafe-fault: unknown fault %q", f)
		}
	}
	cfg.Logger.Warn("UNSAFE FAULTS PLANTED: this node may hand out duplicate or out-of-order IDs", "faults", spec)
	return nil
}

// installClockControl gives the node a wall clock that the fault suite's
// clock nemesis offsets and steps while the node runs: GET /unsafe/clock
// reads the offset, PUT /unsafe/clock {"offset_ms": N} sets it (forward or
// back). Only the wall clock moves; Go's monotonic clock, which times
// leases, timeouts and elections, cannot be offset from outside.
func installClockControl(cfg *server.Config) {
	var offsetMs atomic.Int64
	cfg.WallClockOffset = func() time.Duration { return time.Duration(offsetMs.Load()) * time.Millisecond }
	cfg.Cluster.WallClock = func() time.Time { return time.Now().Add(cfg.WallClockOffset()) }
	type clockState struct {
		OffsetMs int64 `json:"offset_ms"`
		NowMs    int64 `json:"now_ms"`
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/unsafe/clock", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
		case http.MethodPut:
			var in clockState
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&in); err != nil {
				http.Error(w, "body must be {\"offset_ms\": N}: "+err.Error(), http.StatusBadRequest)
				return
			}
			offsetMs.Store(in.OffsetMs)
			cfg.Logger.Warn("UNSAFE: wall clock offset set", "offset_ms", in.OffsetMs)
		default:
			http.Error(w, "GET or PUT", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(clockState{OffsetMs: offsetMs.Load(), NowMs: cfg.Cluster.WallClock().UnixMilli()})
	})
	cfg.UnsafeHandler = mux
}

// promoteFaults plants the bugs of ticketd promote.
func promoteFaults(spec string) (func(*fsm.FSM), error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var x fsm.Faults
	for _, f := range strings.Split(spec, ",") {
		switch strings.TrimSpace(f) {
		case "promote-without-advance":
			x.PromoteWithoutAdvance = true
		case "promote-keeps-leases":
			x.PromoteKeepsLeases = true
		default:
			return nil, fmt.Errorf("--unsafe-fault %q: ticketd promote knows only promote-without-advance and promote-keeps-leases", f)
		}
	}
	return func(f *fsm.FSM) { f.PlantFaults(x) }, nil
}
