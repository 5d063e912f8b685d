package rehearsal

import (
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// service is the client Service (type ClusterIP) as kube-proxy's userspace
// mode made it: a listener on the cluster IP that sends each new connection
// to the next Ready endpoint, trying the others if one refuses. A pod that
// stops being Ready receives no new connection; one already open lives on,
// as with conntrack in the iptables and IPVS modes.
type service struct {
	ln        net.Listener
	endpoints func() []string // "ip:port" of the Ready pods, now

	mu    sync.Mutex
	next  int
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newService(port int, endpoints func() []string) (*service, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(serviceIP, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	s := &service{ln: ln, endpoints: endpoints, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

func (s *service) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.proxy(c)
		}()
	}
}

func (s *service) pick() []string {
	eps := s.endpoints()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(eps) == 0 {
		return nil
	}
	s.next++
	start := s.next % len(eps)
	return append(eps[start:], eps[:start]...)
}

func (s *service) proxy(c net.Conn) {
	defer c.Close()
	var up net.Conn
	for _, ep := range s.pick() {
		var err error
		if up, err = net.DialTimeout("tcp", ep, time.Second); err == nil {
			break
		}
	}
	if up == nil {
		return // no Ready endpoint: the client sees the connection closed
	}
	defer up.Close()
	if !s.track(c, up) {
		return
	}
	defer s.untrack(c, up)
	// Either side's end ends both: HTTP never half-closes, and a pod whose
	// sandbox is gone would never end its half.
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
}

func (s *service) track(conns ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		return false
	}
	for _, c := range conns {
		s.conns[c] = true
	}
	return true
}

func (s *service) untrack(conns ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range conns {
		delete(s.conns, c)
	}
}

func (s *service) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
}
