package main

import (
	"flag"
	"fmt"
)

// Output formats of the commands that print a table for people by default
// and JSON for scripts (as etcdctl -w, kubectl -o).
const (
	outputTable = "table"
	outputJSON  = "json"
)

// outputFlag registers -o (and its long form --output, so that
// TICKETD_OUTPUT=json can set it for a whole script) on fs. Its value is ""
// until given; resolve it with output.
func outputFlag(fs *flag.FlagSet) *string {
	v := new(string)
	const help = "output format: table (for people) or json (for scripts; the same JSON as before tables)"
	fs.StringVar(v, "o", "", help+" (default table)")
	fs.StringVar(v, "output", "", "same as -o")
	return v
}

// output is the format asked for, def when none was: a usage error names
// the allowed values.
func output(v, def string) (string, error) {
	switch v {
	case "":
		return def, nil
	case outputTable, outputJSON:
		return v, nil
	}
	return "", usageError{fmt.Sprintf("-o %q: want %s or %s", v, outputTable, outputJSON)}
}
