// Package auth holds ticketd's bearer tokens and their scopes.
//
// Tokens come from a file or an environment variable, never from the command
// line or a query string (both end up in process listings and access logs).
// Each line of the source is "SCOPES TOKEN": SCOPES is a comma-separated list
// of "reserve" and "admin"; blank lines and lines starting with '#' are
// skipped. Lookups compare SHA-256 digests in constant time against every
// token, so timing reveals neither a token nor which one matched.
package auth

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Scope is a permission a token grants.
type Scope string

const (
	// ScopeReserve allows reservations and reads.
	ScopeReserve Scope = "reserve"
	// ScopeAdmin allows everything: creating sequences, membership,
	// snapshots, backup and restore, and what reserve allows.
	ScopeAdmin Scope = "admin"
)

// MinTokenLength is the shortest token accepted: 128 bits of base64/hex.
const MinTokenLength = 22

type entry struct {
	digest [sha256.Size]byte
	scopes map[Scope]bool
}

// Tokens is a set of tokens with their scopes.
type Tokens struct {
	entries []entry
	admin   string // one admin token, for the node's own calls to other nodes
}

// Parse reads tokens in the "SCOPES TOKEN" line format.
func Parse(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	seen := map[[sha256.Size]byte]bool{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("tokens line %d: want \"SCOPES TOKEN\", got %d fields", line, len(fields))
		}
		e := entry{scopes: map[Scope]bool{}}
		for _, s := range strings.Split(fields[0], ",") {
			switch Scope(s) {
			case ScopeReserve, ScopeAdmin:
				e.scopes[Scope(s)] = true
			default:
				return nil, fmt.Errorf("tokens line %d: unknown scope %q (want reserve or admin)", line, s)
			}
		}
		token := fields[1]
		if len(token) < MinTokenLength {
			return nil, fmt.Errorf("tokens line %d: token is %d characters; at least %d are required", line, len(token), MinTokenLength)
		}
		e.digest = sha256.Sum256([]byte(token))
		if seen[e.digest] {
			return nil, fmt.Errorf("tokens line %d: token listed twice", line)
		}
		seen[e.digest] = true
		if e.scopes[ScopeAdmin] && t.admin == "" {
			t.admin = token
		}
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	if len(t.entries) == 0 {
		return nil, errors.New("no tokens defined")
	}
	return t, nil
}

// Check reports whether token is known (found) and whether it grants scope.
// Admin grants every scope.
func (t *Tokens) Check(token string, scope Scope) (found, allowed bool) {
	d := sha256.Sum256([]byte(token))
	var match *entry
	for i := range t.entries {
		// Every entry is compared, whatever matched before.
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			match = &t.entries[i]
		}
	}
	if match == nil {
		return false, false
	}
	return true, match.scopes[ScopeAdmin] || match.scopes[scope]
}

// AdminToken returns an admin token for the node's own calls to other nodes
// (joining, registering its address), or "" if the set has none.
func (t *Tokens) AdminToken() string { return t.admin }
