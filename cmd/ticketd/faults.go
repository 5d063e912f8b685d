//go:build ticketd_faults

package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/server"
)

// This file is compiled only with -tags ticketd_faults: the binary the
// fault-injection suite uses to show that it catches each planted bug. A
// production build has no --unsafe-fault flag at all.

const faultsBuild = true

func registerFaultFlag(fs *flag.FlagSet) *string {
	return fs.String("unsafe-fault", "", "TEST ONLY: plant bugs, comma-separated: serve-uncommitted, skip-barrier, skip-verify, keep-blocks, restore-skip-empty-check, reuse-lease-tokens, skip-acquire-idempotency")
}

func applyFaults(spec string, cfg *server.Config) error {
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
		case "restore-skip-empty-check":
			cfg.UnsafeFSM.RestoreSkipEmptyCheck = true
		case "reuse-lease-tokens":
			cfg.UnsafeFSM.ReuseLeaseTokens = true
		case "skip-acquire-idempotency":
			cfg.UnsafeFSM.SkipAcquireIdempotency = true
		default:
			return fmt.Errorf("--unsafe-fault: unknown fault %q", f)
		}
	}
	cfg.Logger.Warn("UNSAFE FAULTS PLANTED: this node may hand out duplicate or out-of-order IDs", "faults", spec)
	return nil
}
