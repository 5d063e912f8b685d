// Package buildinfo says which release a ticketd binary is: the version the
// build stamped into it (git describe of the commit it was built from), or,
// for a plain `go build`, what the Go toolchain recorded of the checkout.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// version is set at link time by the project's build scripts and Dockerfile:
//
//	go build -ldflags "-X github.com/ticketd/ticketd/internal/buildinfo.version=$(git describe --tags --always --dirty)"
var version string

var (
	once     sync.Once
	resolved string
)

// Version is this binary's release: the stamped version when there is one,
// else "devel+<revision>" (with "-dirty" for a modified checkout) from the
// VCS information Go records, else "devel".
func Version() string {
	once.Do(func() { resolved = resolve(version, debug.ReadBuildInfo) })
	return resolved
}

func resolve(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if stamped != "" {
		return stamped
	}
	bi, ok := read()
	if !ok {
		return "devel"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel+" + rev
}
