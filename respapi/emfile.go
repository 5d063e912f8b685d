package respapi

import "syscall"

// syscallEMFILE: out of file descriptors, a reason to pause accepting
// rather than stop serving.
var syscallEMFILE error = syscall.EMFILE
