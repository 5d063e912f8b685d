package main

import (
	"errors"
	"io"
)

// migrateCmd is being written (issue #16).
func migrateCmd(args []string, stdout, stderr io.Writer) error {
	return errors.New("migrate: not built yet")
}
