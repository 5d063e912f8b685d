package resp

// ArenaCap is the capacity the reader keeps for arguments.
func ArenaCap(r *Reader) int { return cap(r.arena) }
