package main

import (
	"net"
	"testing"
)

// TestParseKindTargets_AllowNet: peers are driven on loopback, and off it
// only in the network --allow-net names (leasebench's namespaces).
func TestParseKindTargets_AllowNet(t *testing.T) {
	defer func() { allowedNet = nil }()
	if _, err := parseKindTargets("redis", "10.231.79.11:18301"); err == nil {
		t.Fatal("accepted off loopback without --allow-net")
	}
	_, allowedNet, _ = net.ParseCIDR("10.231.79.0/24")
	if _, err := parseKindTargets("resp", "10.231.79.13:18373"); err != nil {
		t.Errorf("in --allow-net: %v", err)
	}
	for _, bad := range []string{"10.231.80.1:6379", "10.0.0.1:6379", "example.com:6379"} {
		if _, err := parseKindTargets("redis", bad); err == nil {
			t.Errorf("%s: accepted outside --allow-net", bad)
		}
	}
}
