package client

import "testing"

// A used-up block's counter grows with every call that finds it used up. It
// must never come back around to a value below n, which would hand out the
// block's IDs again; here it starts 15 short of 2^64, as after about 1.8e12
// calls of NextN(10,000,000) on an exhausted sequence.
func TestBlock_UsedUpCounterNeverComesBackAround(t *testing.T) {
	b := &block{first: 1000, n: 100, trigger: -1}
	b.used.Store(-15)
	for call := 0; call < 10; call++ {
		if r, _, ok := b.take(10); ok {
			t.Fatalf("call %d: a used-up block handed out %+v again", call, r)
		}
	}
	b.used.Store(-3)
	for call := 0; call < 10; call++ {
		if i, ok := b.next(); ok {
			t.Fatalf("call %d: a used-up block handed out %d again", call, b.first+i)
		}
	}
}
