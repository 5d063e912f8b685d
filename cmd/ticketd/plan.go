package main

import (
	"errors"
	"io"
)

// planCmd is being written (issue #16).
func planCmd(args []string, stdout, stderr io.Writer) error {
	return errors.New("plan: not built yet")
}
