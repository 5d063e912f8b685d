package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// completionScript writes `ticketd completion SHELL` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	code, out, errs := runCLI(t, "completion", shell)
	if code != 0 || errs != "" {
		t.Fatalf("completion %s: exit %d, %s", shell, code, errs)
	}
	path := filepath.Join(t.TempDir(), "ticketd."+shell)
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompletionBash_CompletesCommandsFlagsAndOutputFormats(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	script := completionScript(t, "bash")
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, c := range []struct{ words, want string }{
		{"ticketd sta", "status"},
		{"ticketd s", "serve sequences status"},
		{"ticketd status --o", "--output"},
		{"ticketd sequences -o ''", "table json"},
		{"ticketd ids orders -o ''", "json"},
		{"ticketd i", "ids inspect"},
		{"ticketd audit --li", "--list --limit"},
		{"ticketd namespaces photos --le", "--leases"},
		{"ticketd tls c", "ca cert"},
		{"ticketd tls ca cr", "create"},
		{"ticketd completion ''", "bash zsh"},
		{"ticketd leader ''", "transfer"},
		{"ticketd leader transfer --t", "--timeout --token-file --to"},
		{"ticketd members ''", "reconcile"},
		{"ticketd members reconcile --re", "--replicas"},
	} {
		words := strings.Fields(c.words)
		drive := "source " + script + "; COMP_WORDS=(" + strings.Join(words, " ") + "); COMP_CWORD=" +
			strings.TrimSpace(string(rune('0'+len(words)-1))) + "; _ticketd; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command("bash", "-c", drive).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
			t.Errorf("completing %q: %q (%v), want %q", c.words, got, err, c.want)
		}
	}
}

// zsh is checked only where it is installed (Debian: apt-get install zsh);
// elsewhere the test skips, and says so.
func TestCompletionZsh_ParsesAndRegisters(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh is not installed: its script's syntax is not checked")
	}
	script := completionScript(t, "zsh")
	if out, err := exec.Command("zsh", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	drive := "autoload -U compinit; compinit -u -d " + filepath.Join(t.TempDir(), "zcompdump") + "; source " + script + "; print -r -- $_comps[ticketd]"
	if out, err := exec.Command("zsh", "-f", "-c", drive).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "_ticketd" {
		t.Fatalf("sourcing the zsh script did not register _ticketd: %v\n%s", err, out)
	}
}

// The completion table lists the flags each command's -h shows, no more and
// no fewer, so that a new flag cannot be forgotten there.
func TestCompletion_FlagsMatchEachCommandsHelp(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^ {2,4}--?([a-z][a-z0-9-]*)`)
	for _, c := range completionCommands {
		args := []string{c.name, "-h"}
		switch c.name {
		case "completion", "help":
			continue
		case "tls":
			continue // three subcommands; checked below
		}
		var out, errb bytes.Buffer
		run(args, &out, &errb)
		var help []string
		for _, m := range flagLine.FindAllStringSubmatch(out.String()+errb.String(), -1) {
			if !slices.Contains(help, m[1]) {
				help = append(help, m[1])
			}
		}
		slices.Sort(help)
		got := slices.Sorted(slices.Values(c.flags))
		if !slices.Equal(got, help) {
			t.Errorf("%s: completion offers %v, -h lists %v", c.name, got, help)
		}
	}
	var tls []string
	for _, sub := range [][]string{{"tls", "ca", "create", "-h"}, {"tls", "cert", "create", "-h"}, {"tls", "init", "-h"}} {
		var out, errb bytes.Buffer
		run(sub, &out, &errb)
		for _, m := range flagLine.FindAllStringSubmatch(errb.String(), -1) {
			if !slices.Contains(tls, m[1]) {
				tls = append(tls, m[1])
			}
		}
	}
	slices.Sort(tls)
	for _, c := range completionCommands {
		if c.name == "tls" && !slices.Equal(slices.Sorted(slices.Values(c.flags)), tls) {
			t.Errorf("tls: completion offers %v, -h lists %v", slices.Sorted(slices.Values(c.flags)), tls)
		}
	}
}
