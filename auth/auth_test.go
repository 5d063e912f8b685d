package auth

import (
	"strings"
	"testing"
)

const (
	adminTok   = "admin-token-0123456789abcdef"
	reserveTok = "reserve-token-0123456789abcdef"
)

func TestParseAndCheck(t *testing.T) {
	tk, err := Parse(strings.NewReader("# comment\n\nadmin " + adminTok + "\nreserve " + reserveTok + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		token          string
		scope          Scope
		found, allowed bool
	}{
		{adminTok, ScopeAdmin, true, true},
		{adminTok, ScopeReserve, true, true},
		{reserveTok, ScopeReserve, true, true},
		{reserveTok, ScopeAdmin, true, false},
		{"wrong-token-0123456789abcdef", ScopeReserve, false, false},
		{"", ScopeReserve, false, false},
		{adminTok + "x", ScopeAdmin, false, false},
	}
	for _, c := range cases {
		found, allowed := tk.Check(c.token, c.scope)
		if found != c.found || allowed != c.allowed {
			t.Errorf("Check(%q, %s) = %v, %v; want %v, %v", c.token, c.scope, found, allowed, c.found, c.allowed)
		}
	}
	if tk.AdminToken() != adminTok {
		t.Errorf("AdminToken = %q", tk.AdminToken())
	}
}

func TestParse_Errors(t *testing.T) {
	for _, in := range []string{
		"",
		"# only a comment\n",
		"admin",
		"admin short",
		"superuser " + adminTok,
		"admin " + adminTok + " extra",
		"admin " + adminTok + "\nreserve " + adminTok,
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
}
