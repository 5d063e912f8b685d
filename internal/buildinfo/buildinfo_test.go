package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve_StampedWinsElseVCSElseDevel(t *testing.T) {
	info := func(mainVersion string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Settings: settings}
			bi.Main.Version = mainVersion
			return bi, true
		}
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "65fb742a1b2c3d4e5f60718293a4b5c6d7e8f901"}
	for _, c := range []struct {
		name, stamped string
		read          func() (*debug.BuildInfo, bool)
		want          string
	}{
		{"a stamped tag", "v0.31.0", info("(devel)", rev), "v0.31.0"},
		{"a stamped describe of a dirty untagged clone", "65fb742-dirty", info("(devel)", rev), "65fb742-dirty"},
		{"no build info", "", func() (*debug.BuildInfo, bool) { return nil, false }, "devel"},
		{"a clean checkout", "", info("(devel)", rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), "devel+65fb742a1b2c"},
		{"a modified checkout", "", info("(devel)", rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "devel+65fb742a1b2c-dirty"},
		{"a short revision kept whole", "", info("", debug.BuildSetting{Key: "vcs.revision", Value: "abc123"}), "devel+abc123"},
		{"go install of a module version", "", info("v0.30.0"), "v0.30.0"},
		{"no VCS and no module version", "", info("(devel)"), "devel"},
		{"no VCS and an empty module version", "", info(""), "devel"},
	} {
		if got := resolve(c.stamped, c.read); got != c.want {
			t.Errorf("%s: resolve(%q) = %q, want %q", c.name, c.stamped, got, c.want)
		}
	}
}

// Version resolves once: what a node reports does not change while it runs.
func TestVersion_SameOnEveryCall(t *testing.T) {
	first := Version()
	if first == "" {
		t.Fatal("Version() is empty")
	}
	if again := Version(); again != first {
		t.Fatalf("Version() = %q, then %q", first, again)
	}
}
