package ticketdtest

// RaftAddr is the node's Raft address, for the test that checks Close frees
// every port.
func RaftAddr(s *Server) string { return s.raftAddr }

// DataDir is the node's data directory.
func DataDir(s *Server) string { return s.dir }
