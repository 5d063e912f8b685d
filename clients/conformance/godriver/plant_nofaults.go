//go:build !ticketd_faults

package main

import "fmt"

// The counterpart of plant_faults.go in every other build: no bug can be
// planted, and naming one is refused, so that a run asking for a plant the
// binary cannot switch on ends with no verdict instead of passing.
func plantsFor(plant string) (plants, error) {
	if plant == "" {
		return plants{}, nil
	}
	return plants{}, fmt.Errorf("plant %q: this driver was built without -tags ticketd_faults, which plants need", plant)
}
