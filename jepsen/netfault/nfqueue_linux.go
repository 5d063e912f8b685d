//go:build linux

package netfault

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Netlink and nfnetlink_queue constants (linux/netfilter/nfnetlink_queue.h).
const (
	nfnlSubsysQueue   = 3
	nfqnlMsgPacket    = 0
	nfqnlMsgConfig    = 2
	nfqnlMsgVerdictBt = 3 // NFQNL_MSG_VERDICT_BATCH

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2

	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgQueueMax = 3
	nfqaCfgMask     = 4
	nfqaCfgFlags    = 5

	nfqnlCfgCmdBind   = 1
	nfqnlCfgCmdUnbind = 2
	nfqnlCopyMeta     = 1
	nfqaCfgFFailOpen  = 1

	nfAccept = 1

	queueMaxLen = 65536
)

// Delayer is a userspace stand-in for `tc qdisc ... netem delay`: it binds
// an NFQUEUE queue inside a network namespace and accepts every packet that
// iptables sends there only once Delay (plus a uniform random part of up to
// Jitter) has passed. Packets leave in the order they came (no reordering,
// unlike netem with jitter). The kernel keeps the packet; only its id
// crosses to userspace (copy mode "meta"), so the cost is one netlink message
// per packet.
//
// Use it with a rule such as
//
//	iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num Q --queue-bypass
//
// (--queue-bypass: if the delayer is gone, packets pass instead of being
// dropped). Remove the rule before Close; Close accepts what is still held.
type Delayer struct {
	fd     int
	queue  uint16
	delay  time.Duration
	jitter time.Duration
	rnd    *rand.Rand

	mu      sync.Mutex
	pending []heldPacket
	lastAt  time.Time
	maxID   uint32
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	closed  atomic.Bool
	packets atomic.Uint64
	errs    atomic.Uint64
	seq     atomic.Uint32
}

type heldPacket struct {
	id uint32
	at time.Time
}

// StartDelayer binds queue in the network namespace at nsPath and starts
// delaying.
func StartDelayer(nsPath string, queue uint16, delay, jitter time.Duration, seed uint64) (*Delayer, error) {
	d := &Delayer{queue: queue, delay: delay, jitter: jitter, rnd: rand.New(rand.NewPCG(seed, uint64(queue))),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), fd: -1}
	err := InNetns(nsPath, func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		if err != nil {
			return fmt.Errorf("netlink socket: %w", err)
		}
		d.fd = fd
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := d.init(); err != nil {
		_ = unix.Close(d.fd)
		return nil, err
	}
	d.wg.Add(2)
	go d.readLoop()
	go d.releaseLoop()
	return d, nil
}

func (d *Delayer) init() error {
	if err := unix.Bind(d.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("bind netlink: %w", err)
	}
	_ = unix.SetsockoptInt(d.fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	_ = unix.SetsockoptInt(d.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(d.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	// Bind the queue, then ask for metadata only, a long queue, and
	// fail-open (accept rather than drop) should the queue ever fill.
	if err := d.request(nfqnlMsgConfig, attr(nfqaCfgCmd, []byte{nfqnlCfgCmdBind, 0, 0, 0}), true); err != nil {
		return fmt.Errorf("bind queue %d (is another program bound to it?): %w", d.queue, err)
	}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0)
	params[4] = nfqnlCopyMeta
	if err := d.request(nfqnlMsgConfig, attr(nfqaCfgParams, params), true); err != nil {
		return fmt.Errorf("queue %d copy mode: %w", d.queue, err)
	}
	if err := d.request(nfqnlMsgConfig, attr(nfqaCfgQueueMax, be32(queueMaxLen)), true); err != nil {
		return fmt.Errorf("queue %d max length: %w", d.queue, err)
	}
	flags := append(attr(nfqaCfgFlags, be32(nfqaCfgFFailOpen)), attr(nfqaCfgMask, be32(nfqaCfgFFailOpen))...)
	if err := d.request(nfqnlMsgConfig, flags, true); err != nil {
		return fmt.Errorf("queue %d fail-open: %w", d.queue, err)
	}
	return nil
}

// Packets reports how many packets the delayer has held.
func (d *Delayer) Packets() uint64 { return d.packets.Load() }

// Close accepts every held packet, unbinds the queue and closes the socket.
func (d *Delayer) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	close(d.stop)
	d.wg.Wait()
	d.mu.Lock()
	maxID, n := d.maxID, len(d.pending)
	d.pending = nil
	d.mu.Unlock()
	var errs []error
	if n > 0 {
		errs = append(errs, d.verdictBatch(maxID))
	}
	errs = append(errs, d.request(nfqnlMsgConfig, attr(nfqaCfgCmd, []byte{nfqnlCfgCmdUnbind, 0, 0, 0}), false))
	errs = append(errs, unix.Close(d.fd))
	return errors.Join(errs...)
}

func (d *Delayer) readLoop() {
	defer d.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(d.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
				continue
			}
			d.errs.Add(1)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		now := time.Now()
		for _, id := range parsePacketIDs(buf[:n]) {
			d.hold(id, now)
		}
	}
}

func (d *Delayer) hold(id uint32, now time.Time) {
	at := now.Add(d.delay)
	d.mu.Lock()
	if d.jitter > 0 {
		at = at.Add(time.Duration(d.rnd.Int64N(int64(d.jitter) + 1)))
	}
	if at.Before(d.lastAt) {
		at = d.lastAt // keep FIFO: a packet never overtakes an earlier one
	}
	d.lastAt = at
	d.pending = append(d.pending, heldPacket{id: id, at: at})
	if id > d.maxID {
		d.maxID = id
	}
	first := len(d.pending) == 1
	d.mu.Unlock()
	d.packets.Add(1)
	if first {
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
}

func (d *Delayer) releaseLoop() {
	defer d.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		d.mu.Lock()
		now := time.Now()
		i := 0
		for i < len(d.pending) && !d.pending[i].at.After(now) {
			i++
		}
		var last uint32
		if i > 0 {
			last = d.pending[i-1].id
			d.pending = append(d.pending[:0], d.pending[i:]...)
		}
		wait := 50 * time.Millisecond
		if len(d.pending) > 0 {
			wait = max(time.Until(d.pending[0].at), 0)
		}
		d.mu.Unlock()
		if i > 0 {
			// Packet ids grow, and the queue is FIFO: one batch verdict
			// accepts every id up to last.
			if err := d.verdictBatch(last); err != nil {
				d.errs.Add(1)
			}
		}
		t.Reset(wait)
		select {
		case <-d.stop:
			return
		case <-d.kick:
		case <-t.C:
		}
	}
}

func (d *Delayer) verdictBatch(id uint32) error {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v[0:4], nfAccept)
	binary.BigEndian.PutUint32(v[4:8], id)
	return d.request(nfqnlMsgVerdictBt, attr(nfqaVerdictHdr, v), false)
}

// request sends one nfnetlink queue message; with ack it waits for the
// kernel's answer.
func (d *Delayer) request(msgType uint16, attrs []byte, ack bool) error {
	const hdrLen = 16 + 4
	msg := make([]byte, hdrLen+len(attrs))
	flags := uint16(unix.NLM_F_REQUEST)
	if ack {
		flags |= unix.NLM_F_ACK
	}
	seq := d.seq.Add(1)
	binary.NativeEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:6], nfnlSubsysQueue<<8|msgType)
	binary.NativeEndian.PutUint16(msg[6:8], flags)
	binary.NativeEndian.PutUint32(msg[8:12], seq)
	binary.NativeEndian.PutUint32(msg[12:16], 0)
	msg[16] = unix.AF_UNSPEC
	msg[17] = 0 // NFNETLINK_V0
	binary.BigEndian.PutUint16(msg[18:20], d.queue)
	copy(msg[hdrLen:], attrs)
	if err := unix.Sendto(d.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	if !ack {
		return nil
	}
	buf := make([]byte, 1<<16)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(d.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		b := buf[:n]
		for len(b) >= 16 {
			l := binary.NativeEndian.Uint32(b[0:4])
			typ := binary.NativeEndian.Uint16(b[4:6])
			s := binary.NativeEndian.Uint32(b[8:12])
			if l < 16 || int(l) > len(b) {
				break
			}
			if typ == unix.NLMSG_ERROR && s == seq && l >= 20 {
				if code := int32(binary.NativeEndian.Uint32(b[16:20])); code != 0 {
					return unix.Errno(-code)
				}
				return nil
			}
			b = b[align4(int(l)):]
		}
	}
	return errors.New("no answer from nfnetlink")
}

// parsePacketIDs returns the packet ids of every NFQNL_MSG_PACKET message in
// one netlink read.
func parsePacketIDs(b []byte) []uint32 {
	var ids []uint32
	for len(b) >= 16 {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if l < 16 || l > len(b) {
			break
		}
		if typ == nfnlSubsysQueue<<8|nfqnlMsgPacket && l >= 20 {
			a := b[20:l]
			for len(a) >= 4 {
				al := int(binary.NativeEndian.Uint16(a[0:2]))
				at := binary.NativeEndian.Uint16(a[2:4]) & 0x3fff
				if al < 4 || al > len(a) {
					break
				}
				if at == nfqaPacketHdr && al >= 8 {
					ids = append(ids, binary.BigEndian.Uint32(a[4:8]))
				}
				a = a[min(align4(al), len(a)):]
			}
		}
		b = b[min(align4(l), len(b)):]
	}
	return ids
}

func attr(typ uint16, payload []byte) []byte {
	l := 4 + len(payload)
	out := make([]byte, align4(l))
	binary.NativeEndian.PutUint16(out[0:2], uint16(l))
	binary.NativeEndian.PutUint16(out[2:4], typ)
	copy(out[4:], payload)
	return out
}

func be32(v uint32) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, v)
	return b
}

func align4(n int) int { return (n + 3) &^ 3 }
