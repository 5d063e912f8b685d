package main

import (
	"fmt"
	"io"
	"strings"
)

// Shell completion, as etcdctl, consul and kubectl ship it: `ticketd
// completion bash|zsh` prints a script that completes the subcommands, their
// flags, -o's values and file names after the flags that take a file. It is
// static (it never asks a server), written from the table below; a test holds
// the table to the flags each command's -h lists.

// completionCommand is one subcommand as completion offers it.
type completionCommand struct {
	name, about string
	// flags are offered as --name (Go's flag package takes - and --).
	flags []string
}

// clientFlagNames are the flags every client command shares (clientFlags).
var clientFlagNames = []string{"addr", "timeout", "token-file", "ca", "cert", "key"}

// outputFlagNames are -o's (outputFlag); "o" is offered as -o.
var outputFlagNames = []string{"o", "output"}

func withClient(flags ...string) []string {
	return append(append([]string{}, clientFlagNames...), flags...)
}

var completionCommands = []completionCommand{
	{"serve", "run a node", []string{"id", "data-dir", "http-addr", "http-advertise", "resp-addr", "raft-addr", "raft-advertise",
		"initial-cluster", "bootstrap", "join", "log-level", "log-format", "raft-log-level", "heartbeat-timeout", "election-timeout",
		"leader-lease-timeout", "lease-reads", "lease-duration", "lease-max-drift", "snapshot-threshold", "snapshot-interval", "trailing-logs", "raft-max-rpcs-in-flight", "max-ready-lag", "snowflake-namespaces",
		"standby", "standby-bound", "standby-timeout", "pprof", "shutdown-timeout", "dev", "insecure-plaintext-raft", "max-inflight", "metrics-public", "raft-tls-ca", "raft-tls-cert",
		"raft-tls-key", "tls-ca", "tls-cert", "tls-client-auth", "tls-key", "tls-reload-interval", "tokens-file"}},
	{"create", "create a sequence", withClient("start", "max")},
	{"reserve", "reserve N consecutive IDs", withClient()},
	{"sequences", "show one or every sequence", withClient("o", "output", "rate-window")},
	{"raise", "lift a sequence's high-water mark", withClient("at-least")},
	{"migrate", "create or raise a sequence above a legacy generator", withClient("sequence", "from", "pg-sequence", "table",
		"column", "from-number", "margin", "max", "dry-run", "json")},
	{"plan", "propose Snowflake bit layouts", []string{"rate", "generators", "years", "tick", "epoch", "json"}},
	{"status", "show the cluster and capacity left", withClient(outputFlagNames...)},
	{"join", "add a node", withClient("id", "raft-addr", "http-addr", "standby", "standby-bound", "standby-timeout")},
	{"remove", "remove a node", withClient()},
	{"leader", "hand leadership to a named voter", withClient("to")},
	{"members", "remove the voters above --replicas (Helm scale-down hook)", withClient("replicas", "id-prefix")},
	{"namespaces", "Snowflake namespaces and their leases", withClient("create", "preset", "horizon-years", "leases", "o", "output")},
	{"ids", "Snowflake IDs of a namespace, one a line", withClient("n", "o", "output")},
	{"inspect", "decode a Snowflake ID or locate a range ID", withClient("namespace", "sequence")},
	{"audit", "run the uniqueness probe, or list the audit", withClient("list", "after-seq", "limit", "o", "output")},
	{"backup", "write a consistent backup", withClient("out", "out-dir", "keep")},
	{"restore", "seed a new, empty cluster from a backup", withClient("in", "advance")},
	{"promote", "make a stopped standby a one-node cluster", []string{"data-dir", "id", "advance", "primary-lost-at", "max-clock-skew", "o"}},
	{"tls", "make a cluster CA and certificates", []string{"dir", "key-dir", "days", "name", "ca", "ca-key", "ca-key-dir", "node", "client",
		"dns", "ip", "loopback", "nodes", "k8s-secret", "k8s-ca-secret", "k8s-auth-secret", "k8s-service-account-dir", "renew-before"}},
	{"completion", "print a shell completion script (bash or zsh)", nil},
	{"version", "print the release and feature level", []string{"o", "output"}},
	{"help", "print the usage", nil},
}

// subcommand is the one word that follows these commands (their flags
// come after it).
var subcommand = map[string]string{"leader": "transfer", "members": "reconcile"}

// fileFlags take a file or directory name: completion offers file names after them.
var fileFlags = []string{"data-dir", "token-file", "tokens-file", "ca", "cert", "key", "out", "out-dir", "in", "dir", "key-dir",
	"ca-key", "ca-key-dir", "k8s-service-account-dir", "raft-tls-ca", "raft-tls-cert", "raft-tls-key", "tls-ca", "tls-cert", "tls-key"}

func completionCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return usageError{"usage: ticketd completion bash|zsh\n" +
			"  bash: source <(ticketd completion bash)   (or save it in /etc/bash_completion.d/ticketd)\n" +
			"  zsh:  source <(ticketd completion zsh)    (after compinit; or save it as _ticketd in a directory of $fpath)"}
	}
	switch args[0] {
	case "bash":
		_, err := io.WriteString(stdout, bashCompletion())
		return err
	case "zsh":
		_, err := io.WriteString(stdout, zshCompletion())
		return err
	}
	return usageError{fmt.Sprintf("completion %q: want bash or zsh", args[0])}
}

// dashed is a flag as completion offers it: -o, --name.
func dashed(flags []string) string {
	out := make([]string, len(flags))
	for i, f := range flags {
		if len(f) == 1 {
			out[i] = "-" + f
		} else {
			out[i] = "--" + f
		}
	}
	return strings.Join(out, " ")
}

func commandNames() string {
	names := make([]string, len(completionCommands))
	for i, c := range completionCommands {
		names[i] = c.name
	}
	return strings.Join(names, " ")
}

func bashCompletion() string {
	var b strings.Builder
	b.WriteString(`# bash completion for ticketd: source <(ticketd completion bash)
_ticketd() {
    local cur prev cmd flags
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    COMPREPLY=()
    if [[ ${COMP_CWORD} -eq 1 ]]; then
        COMPREPLY=($(compgen -W "` + commandNames() + `" -- "${cur}"))
        return 0
    fi
    cmd="${COMP_WORDS[1]}"
    case "${prev}" in
        -o|--o|-output|--output)
            # ids prints JSON or lines of IDs, no table.
            if [[ ${cmd} == ids ]]; then
                COMPREPLY=($(compgen -W "json" -- "${cur}"))
            else
                COMPREPLY=($(compgen -W "table json" -- "${cur}"))
            fi
            return 0 ;;
        ` + bashFileFlags() + `)
            COMPREPLY=($(compgen -f -- "${cur}"))
            return 0 ;;
    esac
    case "${cmd}" in
`)
	for _, c := range completionCommands {
		switch {
		case c.name == "completion":
			b.WriteString("        completion) flags=\"\"; [[ ${COMP_CWORD} -eq 2 ]] && COMPREPLY=($(compgen -W \"bash zsh\" -- \"${cur}\")); return 0 ;;\n")
		case c.name == "tls":
			b.WriteString("        tls)\n            case ${COMP_CWORD} in\n" +
				"                2) COMPREPLY=($(compgen -W \"ca cert init\" -- \"${cur}\")); return 0 ;;\n" +
				"                3) [[ ${COMP_WORDS[2]} != init ]] && { COMPREPLY=($(compgen -W \"create\" -- \"${cur}\")); return 0; } ;;\n" +
				"            esac\n            flags=\"" + dashed(c.flags) + "\" ;;\n")
		case subcommand[c.name] != "":
			b.WriteString("        " + c.name + ")\n            if [[ ${COMP_CWORD} -eq 2 ]]; then COMPREPLY=($(compgen -W \"" + subcommand[c.name] + "\" -- \"${cur}\")); return 0; fi\n" +
				"            flags=\"" + dashed(c.flags) + "\" ;;\n")
		default:
			fmt.Fprintf(&b, "        %s) flags=%q ;;\n", c.name, dashed(c.flags))
		}
	}
	b.WriteString(`        *) flags="" ;;
    esac
    if [[ ${cur} == -* ]]; then
        COMPREPLY=($(compgen -W "${flags}" -- "${cur}"))
    fi
    return 0
}
complete -o default -F _ticketd ticketd
`)
	return b.String()
}

func bashFileFlags() string {
	var alts []string
	for _, f := range fileFlags {
		alts = append(alts, "-"+f, "--"+f)
	}
	return strings.Join(alts, "|")
}

func zshCompletion() string {
	var b strings.Builder
	b.WriteString(`#compdef ticketd
# zsh completion for ticketd: source <(ticketd completion zsh) after compinit,
# or save it as _ticketd in a directory of $fpath.
_ticketd() {
    local -a commands flags
    commands=(
`)
	for _, c := range completionCommands {
		fmt.Fprintf(&b, "        %s\n", zshQuote(c.name+":"+c.about))
	}
	b.WriteString(`    )
    if (( CURRENT == 2 )); then
        _describe -t commands 'ticketd command' commands
        return
    fi
    case ${words[CURRENT-1]} in
        -o|--o|-output|--output) if [[ ${words[2]} == ids ]]; then compadd json; else compadd table json; fi; return ;;
        ` + bashFileFlags() + `) _files; return ;;
    esac
    case ${words[2]} in
`)
	for _, c := range completionCommands {
		switch c.name {
		case "completion":
			b.WriteString("        completion) (( CURRENT == 3 )) && compadd bash zsh; return ;;\n")
		case "tls":
			b.WriteString("        tls)\n            if (( CURRENT == 3 )); then compadd ca cert init; return; fi\n" +
				"            if (( CURRENT == 4 )) && [[ ${words[3]} != init ]]; then compadd create; return; fi\n" +
				"            flags=(" + dashed(c.flags) + ") ;;\n")
		case "leader", "members":
			b.WriteString("        " + c.name + ")\n            if (( CURRENT == 3 )); then compadd " + subcommand[c.name] + "; return; fi\n" +
				"            flags=(" + dashed(c.flags) + ") ;;\n")
		default:
			fmt.Fprintf(&b, "        %s) flags=(%s) ;;\n", c.name, dashed(c.flags))
		}
	}
	b.WriteString(`        *) flags=() ;;
    esac
    if [[ ${PREFIX} == -* ]]; then
        compadd -- ${flags}
    else
        _files
    fi
}
if [[ ${funcstack[1]} == _ticketd ]]; then
    _ticketd "$@"
else
    compdef _ticketd ticketd
fi
`)
	return b.String()
}

// zshQuote single-quotes s for zsh.
func zshQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
