package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/buildinfo"
)

// versionInfo is what `ticketd version -o json` prints: the release, and
// the feature level this binary knows (what a rolling upgrade compares:
// the cluster uses a level only once every member knows it).
type versionInfo struct {
	Version   string           `json:"version"`
	GoVersion string           `json:"go_version"`
	Feature   api.FeatureLevel `json:"feature"`
	// FaultsBuild marks a test build with planted bugs (ticketd_faults).
	FaultsBuild bool `json:"faults_build,omitempty"`
}

func currentVersion() versionInfo {
	return versionInfo{
		Version: buildinfo.Version(), GoVersion: runtime.Version(),
		Feature: api.FeatureLevel(fsm.LevelInfo(fsm.CurrentLevel)), FaultsBuild: faultsBuild,
	}
}

func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("version takes no arguments, got %q", fs.Args())}
	}
	format, err := output(*out, outputTable)
	if err != nil {
		return err
	}
	v := currentVersion()
	if format == outputJSON {
		return printJSON(stdout, v)
	}
	_, err = io.WriteString(stdout, v.text())
	return err
}

// text is the version for people: the release on the first line (what
// scripts that read `ticketd version | head -1` always got), the feature
// level on the second.
func (v versionInfo) text() string {
	s := fmt.Sprintf("ticketd %s %s", v.Version, v.GoVersion)
	if v.FaultsBuild {
		s += " [ticketd_faults: test build with planted bugs]"
	}
	return s + fmt.Sprintf("\nfeature level %d: log entry types up to %d, snapshot format %d\n",
		v.Feature.Level, v.Feature.MaxEntryType, v.Feature.SnapshotFormat)
}
