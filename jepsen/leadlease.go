//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// The nemeses of leader leases (issue 44; cluster/DESIGN-leases.md, section
// 5). With --lease-reads a leader cuts ranges without a quorum probe while
// the promises of a majority hold: a voter that answered its lease probe
// votes for no one for the lease duration D (--lease-duration), measured on
// its own clock, and keeps that promise across a restart. Each nemesis aims
// at one way that could go wrong:
//
//   - pause-leader-lease: a leader paused across the end of its lease (a
//     leader that serves past its lease, or whose lease clock runs slow);
//   - restart-promised: voters restarted just after they promised (a voter
//     that forgets its promise at restart);
//   - transfer-under-load: leadership handed away while the old leader
//     learns of the new term late (a lease kept across a transfer).
//
// Without --lease-reads none of them needs a lease to mean something: they
// are a pause, a crash of every follower and a transfer with a slow link,
// faults the cluster must survive either way, with their timings still
// drawn from D. So "--nemesis all" runs them in every schedule, and a run
// with leases off still checks the history they leave.

// leaseDuration is the lease duration the nodes run with (what the nemeses
// time themselves by, whether or not leases are on).
func (m *nemesis) leaseDuration() time.Duration { return m.cfg.leaseDuration() }

// leasePauseFor draws how long pause-leader-lease keeps the leader stopped:
// uniformly in [D/2, D + 4·election timeout]. Below D the lease is still
// running when the leader resumes (its promises hold, no one else can lead);
// past D plus a few election timeouts a new leader has been elected and
// serves while the old one sleeps; the draws in between land near the end
// of the lease, where a leader that counts its lease wrong serves stale
// ranges.
func (m *nemesis) leasePauseFor() time.Duration {
	d := m.leaseDuration()
	lo, hi := d/2, d+4*m.cfg.Election
	return lo + time.Duration(m.rnd.Int64N(int64(hi-lo)+1))
}

// pauseLeaderLease: SIGSTOP the leader for a time drawn around the end of
// its lease (leasePauseFor), then SIGCONT. Unlike pause-leader the pause is
// not stretched until a new leader is seen: its length is the point. The
// clients keep sending to the paused leader, so its sockets hold requests
// invoked after the new leader (if any) acknowledged ranges; it answers
// them the moment it resumes, from its lease if it still believes it holds
// one.
func (m *nemesis) pauseLeaderLease(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	m.targets(ev, l)
	pause := m.leasePauseFor()
	start := time.Now()
	if err := m.c.b.signal(l, syscall.SIGSTOP); err != nil {
		return err
	}
	// Who leads is asked just before the end, within a bound that keeps
	// the pause its drawn length.
	sleepCtx(ctx, pause-150*time.Millisecond)
	seen := m.leaderSeen(ctx, l, 100*time.Millisecond)
	sleepCtx(ctx, pause-time.Since(start))
	err = m.c.b.signal(l, syscall.SIGCONT)
	m.healed(ev)
	ev.Desc = fmt.Sprintf("paused %.2fs (lease %v, %.2f×): %s", time.Since(start).Seconds(), m.leaseDuration(),
		time.Since(start).Seconds()/m.leaseDuration().Seconds(), seen)
	return err
}

// leaderSeen says which node other than old leads, asked within bound:
// a few words for the nemesis's description.
func (m *nemesis) leaderSeen(ctx context.Context, old *Node, bound time.Duration) string {
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if nl, err := m.c.leaderOtherThan(cctx, old, 0); err == nil {
		return "new leader " + nl.ID + " while paused"
	}
	return "no other leader while paused"
}

// restartPromised: SIGSTOP the leader, at once SIGKILL every follower and
// restart each on its data, and SIGCONT the leader 0.4·D after the pause
// began. The harness cannot tell which follower answered the leader's last
// lease probe, so every one is restarted: each of them had promised within
// the last D/3 (the leader renews every D/3), and a voter keeps its promise
// across a restart by voting for no one for D after it starts. So correct
// nodes elect no one before the leader resumes, still holding ~0.57·D of
// lease, and it goes on leading. A voter that forgets its promise at restart
// votes at once: the restarted followers elect one of themselves, which
// serves while the old leader, resumed, still serves from its lease.
// Without leases it is a crash of every follower under a paused leader: the
// restarted followers elect one of themselves and the old leader steps down
// when it resumes.
func (m *nemesis) restartPromised(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	var followers []*Node
	for _, n := range m.c.Members() {
		if n != l && m.c.b.alive(n) {
			followers = append(followers, n)
		}
	}
	m.targets(ev, append([]*Node{l}, followers...)...)
	resume := m.leaseDuration() * 2 / 5
	start := time.Now()
	if err := m.c.b.signal(l, syscall.SIGSTOP); err != nil {
		return err
	}
	var errs []error
	for _, n := range followers {
		errs = append(errs, m.c.b.signal(n, syscall.SIGKILL))
	}
	for _, n := range followers {
		errs = append(errs, m.c.b.waitExit(n, 10*time.Second))
	}
	killed := time.Since(start)
	for _, n := range followers {
		errs = append(errs, m.c.restart(ctx, n))
	}
	restarted := time.Since(start)
	sleepCtx(ctx, resume-150*time.Millisecond)
	seen := m.leaderSeen(ctx, l, 100*time.Millisecond)
	sleepCtx(ctx, resume-time.Since(start))
	errs = append(errs, m.c.b.signal(l, syscall.SIGCONT))
	m.healed(ev)
	ev.Desc = fmt.Sprintf("leader %s paused %.2fs (0.4 × lease %v); followers %s killed within %.0f ms, restarted within %.0f ms; %s",
		l.ID, time.Since(start).Seconds(), m.leaseDuration(), strings.Join(ids(followers), ","),
		float64(killed.Microseconds())/1000, float64(restarted.Microseconds())/1000, seen)
	return errors.Join(errs...)
}

// transferUnderLoad moves leadership 3 to 5 times with POST
// /v1/cluster/leader {"to": id}, each time to a random other running
// member, under the workload. The leader keeps running and serving (unlike
// leader-transfer, whose SIGTERM drains it first). During each move the
// transferee's packets to the old leader are delayed 20-50 ms (the NFQUEUE
// delayer, on the transferee's way out, for the old leader's address only):
// its vote request, and later its heartbeats as leader, reach the old leader
// late, so the old leader learns of the new term late while the new one is
// already serving. A leader that kept its lease across the transfer serves
// from it in that window.
func (m *nemesis) transferUnderLoad(ctx context.Context, ev *checker.Nemesis) error {
	moves := 3 + m.rnd.IntN(3)
	var done []string
	var errs []error
	for i := 0; i < moves && ctx.Err() == nil; i++ {
		l, err := m.c.leader(ctx, 5*time.Second)
		if err != nil {
			errs = append(errs, err)
			break
		}
		var cands []*Node
		for _, n := range m.c.Members() {
			if n != l && m.c.b.alive(n) && !n.isPaused() {
				cands = append(cands, n)
			}
		}
		if len(cands) == 0 {
			errs = append(errs, errors.New("no running member to transfer to"))
			break
		}
		to := cands[m.rnd.IntN(len(cands))]
		if i == 0 {
			m.targets(ev, l)
		}
		m.targets(ev, to)
		delay := time.Duration(20+m.rnd.IntN(31)) * time.Millisecond
		m.queue++
		if err := m.nf.slowTo(to, l, m.queue, delay, 0); err != nil {
			errs = append(errs, fmt.Errorf("delay %s→%s: %w", to.ID, l.ID, err))
			errs = append(errs, m.nf.heal())
			break
		}
		var ans api.LeaderTransfer
		began := time.Now()
		code, err := m.c.call(ctx, http.MethodPost, l, "/v1/cluster/leader", api.LeaderTransferRequest{To: to.ID}, &ans, 10*time.Second)
		took := time.Since(began)
		move := fmt.Sprintf("%s→%s (%v, %.0f ms)", l.ID, to.ID, delay, float64(took.Microseconds())/1000)
		switch {
		case ctx.Err() != nil:
			// The run ended (or the fault's hold did) mid-move.
			move += ": run ended"
		case code == http.StatusServiceUnavailable:
			// The server's answer for a transfer that did not finish
			// within an election timeout, outcome unknown: part of
			// what this nemesis exercises, not a failure of it.
			move += ": 503, outcome unknown"
		case err != nil:
			move += ": " + err.Error()
			errs = append(errs, err)
		case ans.Leader != to.ID:
			move += ": led by " + ans.Leader
		}
		done = append(done, move)
		// The answer comes once the transfer finished; keep the late link
		// a little longer (the old leader may hear of the new term only
		// through it), then heal it before the next move.
		sleepCtx(ctx, 100*time.Millisecond+time.Duration(m.rnd.IntN(200))*time.Millisecond)
		if err := m.nf.heal(); err != nil {
			errs = append(errs, err)
		}
	}
	m.healed(ev)
	ev.Desc = fmt.Sprintf("%d moves: %s", len(done), strings.Join(done, "; "))
	return errors.Join(errs...)
}
