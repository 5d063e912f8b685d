package main

import (
	"flag"
	"fmt"
	"io"
)

// raiseCmd lifts a sequence's high-water mark: after it returns, the cluster
// hands out no ID at or below the value. It never lowers a mark, so a job
// that keeps ticketd above a legacy generator during a transition can run it
// as often as it likes.
func raiseCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("raise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	atLeast := fs.Int64("at-least", 0, "the high-water mark the sequence must have afterwards (every later ID is above it)")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: ticketd raise SEQ --at-least X"}
	}
	if *atLeast < 1 {
		return usageError{fmt.Sprintf("--at-least must be at least 1, got %d", *atLeast)}
	}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	res, err := c.RaiseSequence(ctx, pos[0], *atLeast)
	if err != nil {
		return withHint(err, createHint(pos[0]))
	}
	if res.Raised {
		fmt.Fprintf(stderr, "raised %q past %d (%d IDs skipped)\n", pos[0], *atLeast, res.Skipped)
	} else {
		fmt.Fprintf(stderr, "%q is already at or above %d: nothing changed\n", pos[0], *atLeast)
	}
	return printJSON(stdout, res)
}
