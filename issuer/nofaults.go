//go:build !ticketd_faults

package issuer

// Every build but the fault-injection one (faults.go): no planted bug exists,
// and the checks below are constants the compiler removes.

type faultConfig struct{}

func (faultConfig) keepBlocks() bool       { return false }
func (faultConfig) skipVerify() bool       { return false }
func (faultConfig) serveUncommitted() bool { return false }
func (faultConfig) raiseNoCut() bool       { return false }

type faultState struct{}

func (*sequence) serveUncommitted(int64) {}
