package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ticketd/ticketd/api"
)

const leaderUsage = `usage:
  ticketd leader transfer --to ID [--addr URL,...]
      hands leadership to the voter ID and waits until it leads (issue 43:
      move it off a member before removing that member). Asking for the
      node that leads already changes nothing and succeeds.
`

func leaderCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "transfer" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			// The only subcommand's flags, so that `leader -h` lists
			// them as every other command's -h does.
			return leaderTransferCmd([]string{"-h"}, stdout, stderr)
		}
		fmt.Fprint(stderr, leaderUsage)
		if len(args) == 0 {
			return usageError{"leader: want `transfer`"}
		}
		return usageError{fmt.Sprintf("leader: unknown command %q", args[0])}
	}
	return leaderTransferCmd(args[1:], stdout, stderr)
}

func leaderTransferCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("leader transfer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, leaderUsage)
		fs.PrintDefaults()
	}
	co := clientFlags(fs)
	to := fs.String("to", "", "ID of the voter that should lead (required)")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || strings.TrimSpace(*to) == "" {
		return usageError{"usage: ticketd leader transfer --to ID [--addr URL]"}
	}
	body, err := json.Marshal(api.LeaderTransferRequest{To: *to})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *co.timeout)
	defer cancel()
	data, err := adminCall(ctx, co, http.MethodPost, "/v1/cluster/leader", body)
	if err != nil {
		return err
	}
	var ans api.LeaderTransfer
	if err := json.Unmarshal(data, &ans); err != nil {
		return fmt.Errorf("the leader's answer is not a transfer's: %v: %.200s", err, data)
	}
	if !ans.Transferred {
		fmt.Fprintf(stdout, "%s leads already; nothing moved\n", ans.Leader)
		return nil
	}
	fmt.Fprintf(stdout, "leadership moved from %s to %s\n", ans.From, ans.Leader)
	return nil
}
