package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

// SnowflakeStore is what the Snowflake, audit and inspection endpoints need.
// Reads are linearizable reads on the leader.
type SnowflakeStore interface {
	// CreateNamespace creates a namespace, or finds it with the same
	// settings (Created false); either way with the warnings about its
	// layout.
	CreateNamespace(ctx context.Context, n domain.NamespaceSettings) (domain.NamespaceCreated, error)
	Namespace(ctx context.Context, name string) (domain.Namespace, error)
	Namespaces(ctx context.Context) ([]domain.Namespace, error)
	// The lease writes return the lease with its namespace, read from the
	// state the write was applied to: a grant that committed is answered
	// as granted, never with a 503 from a later leadership check.
	// ClientTimeMs (of an acquire's request, and clientTimeMs of a
	// renewal) is the holder's clock when it sent the request (0 if not
	// given): recorded to bound its timestamps, never compared. An acquire
	// that chooses a worker id gets that one, or an error of kind
	// domain.ErrWorkerUnavailable carrying a *domain.WorkerUnavailableError.
	AcquireLease(ctx context.Context, ns string, r domain.LeaseRequest) (domain.LeaseGrant, error)
	RenewLease(ctx context.Context, ns string, worker int64, token uint64, clientTimeMs int64) (domain.LeaseGrant, error)
	// ReleaseLease with token 0 revokes the lease whoever holds it.
	ReleaseLease(ctx context.Context, ns string, worker int64, token uint64) (domain.LeaseGrant, error)
	Leases(ctx context.Context, ns string) ([]domain.Lease, domain.Namespace, error)
	Audit(ctx context.Context, afterSeq uint64, limit int) (domain.AuditPage, error)
	CheckAudit(ctx context.Context) (domain.AuditCheck, error)
	InspectSequence(ctx context.Context, name string, id int64) (domain.RangeInspection, error)
	InspectSnowflake(ctx context.Context, ns string, id int64) (domain.SnowflakeInspection, error)
	// SnowflakeIDs are count IDs of the namespace made by this node's own
	// generator, from memory, on any node (no leadership needed). Errors
	// of the kinds ErrClockBehind, ErrWorkersExhausted, ErrNoWorkerLease
	// and ErrTimestampExhausted have problems of their own.
	SnowflakeIDs(ctx context.Context, ns string, count int) (domain.SnowflakeIDs, error)
}

func (s *Service) createNamespace(c echo.Context) error {
	name := c.Param("name")
	if err := api.ValidateNewSequenceName(name); err != nil {
		return badRequest("namespace: " + err.Error())
	}
	var req api.NamespaceRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	n := domain.NamespaceSettings{
		Name: name, EpochMs: api.DefaultEpochMs, TimestampBits: api.DefaultTimestampBits,
		WorkerBits: api.DefaultWorkerBits, SequenceBits: api.DefaultSequenceBits, TickMs: api.DefaultTickMs,
		LeaseTTLMs: api.DefaultLeaseTTLMs, RecycleDelayMs: api.DefaultRecycleDelayMs,
	}
	if err := applyPreset(&n, req); err != nil {
		return err
	}
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&n.EpochMs, req.EpochMs)
	set(&n.TickMs, req.TickMs)
	set(&n.LeaseTTLMs, req.LeaseTTLMs)
	set(&n.RecycleDelayMs, req.RecycleDelayMs)
	for _, b := range []struct {
		dst *uint8
		src *uint8
	}{{&n.TimestampBits, req.TimestampBits}, {&n.WorkerBits, req.WorkerBits}, {&n.SequenceBits, req.SequenceBits}} {
		if b.src != nil {
			*b.dst = *b.src
		}
	}
	if req.RecycleDelayMs == nil && req.LeaseTTLMs != nil {
		n.RecycleDelayMs = 2 * n.LeaseTTLMs
	}
	if n.WorkerBits < 63 {
		n.MaxWorkers = int64(1) << n.WorkerBits
	}
	set(&n.MaxWorkers, req.MaxWorkers)
	if h := req.HorizonYears; h != nil {
		if *h < 1 || *h > maxHorizonYears {
			return badRequest(fmt.Sprintf(`field "horizon_years" must be between 1 and %d, got %d`, maxHorizonYears, *h))
		}
		n.HorizonYears = *h
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	res, err := s.store.CreateNamespace(ctx, n)
	if err != nil {
		return s.storeError(c, err)
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return c.JSON(status, api.NamespaceCreated{Namespace: namespaceView(res.Namespace), Warnings: res.Warnings})
}

// maxHorizonYears is the longest horizon_years a namespace may state (the
// state machine's bound, fsm.MaxHorizonYears).
const maxHorizonYears = 10_000

// preset is a layout a namespace request may name instead of its fields.
type preset struct {
	epochMs                                 int64
	timestampBits, workerBits, sequenceBits uint8
	tickMs                                  int64
	role                                    string
}

var presets = map[string]preset{
	api.PresetInstagram: {epochMs: api.InstagramEpochMs, timestampBits: 40, workerBits: 13, sequenceBits: 10, tickMs: 1, role: api.WorkerRoleShard},
}

// applyPreset sets n's layout from req's preset (its defaults in n before
// the request's own fields are applied), and its worker role. A bit field,
// tick_ms or worker_role that the request gives and the preset sets
// otherwise is a 400 naming each conflict.
func applyPreset(n *domain.NamespaceSettings, req api.NamespaceRequest) error {
	switch req.WorkerRole {
	case "", api.WorkerRoleWorker:
	case api.WorkerRoleShard:
		n.WorkerRole = api.WorkerRoleShard
	default:
		return badRequest(fmt.Sprintf(`field "worker_role" must be %q or %q, got %q`, api.WorkerRoleWorker, api.WorkerRoleShard, req.WorkerRole))
	}
	if req.Preset == "" {
		return nil
	}
	p, ok := presets[req.Preset]
	if !ok {
		return badRequest(fmt.Sprintf(`field "preset" names no preset: %q (known: %q)`, req.Preset, api.PresetInstagram))
	}
	var conflicts []string
	bits := func(field string, got *uint8, want uint8) {
		if got != nil && *got != want {
			conflicts = append(conflicts, fmt.Sprintf("%s %d (the preset's is %d)", field, *got, want))
		}
	}
	bits("timestamp_bits", req.TimestampBits, p.timestampBits)
	bits("worker_bits", req.WorkerBits, p.workerBits)
	bits("sequence_bits", req.SequenceBits, p.sequenceBits)
	if req.TickMs != nil && *req.TickMs != p.tickMs {
		conflicts = append(conflicts, fmt.Sprintf("tick_ms %d (the preset's is %d)", *req.TickMs, p.tickMs))
	}
	if role := req.WorkerRole; role != "" && role != p.role {
		conflicts = append(conflicts, fmt.Sprintf("worker_role %q (the preset's is %q)", role, p.role))
	}
	if len(conflicts) > 0 {
		return badRequest(fmt.Sprintf("preset %q sets timestamp_bits %d, worker_bits %d, sequence_bits %d, tick_ms %d and worker_role %q; the request contradicts it: %s",
			req.Preset, p.timestampBits, p.workerBits, p.sequenceBits, p.tickMs, p.role, strings.Join(conflicts, ", ")))
	}
	n.EpochMs, n.TimestampBits, n.WorkerBits, n.SequenceBits, n.TickMs = p.epochMs, p.timestampBits, p.workerBits, p.sequenceBits, p.tickMs
	n.WorkerRole = p.role
	return nil
}

// namespaceView is the wire form of a namespace; the two types have the
// same fields, and the conversion fails to compile if they ever differ.
func namespaceView(n domain.Namespace) api.Namespace { return api.Namespace(n) }

func (s *Service) getNamespace(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	n, err := s.store.Namespace(ctx, c.Param("name"))
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, namespaceView(n))
}

func (s *Service) listNamespaces(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	ns, err := s.store.Namespaces(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.NamespaceList{Namespaces: make([]api.Namespace, 0, len(ns))}
	for _, n := range ns {
		out.Namespaces = append(out.Namespaces, namespaceView(n))
	}
	return c.JSON(http.StatusOK, out)
}

// leaseView is a lease as its holder sees it. The token is shown only to the
// holder (the answers to acquire, renew and release, whose callers already
// hold it): with it, anyone could renew or release someone else's lease.
func leaseView(l domain.Lease, n domain.Namespace, withToken bool) api.Lease {
	v := api.Lease{
		Namespace: l.Namespace, WorkerID: l.WorkerID, Holder: l.Holder,
		GrantedMs: l.GrantedMs, ExpiresMs: l.ExpiresMs, ReleasedMs: l.ReleasedMs,
		TTLMs: n.LeaseTTLMs, Layout: namespaceView(n),
		State: l.State, EndReason: l.EndReason, TimestampFloorMs: l.TimestampFloorMs, GrantSeq: l.GrantSeq,
	}
	if withToken {
		v.Token = l.Token
	}
	return v
}

func (s *Service) acquireLease(c echo.Context) error {
	var req api.LeaseRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.Holder == "" || len(req.Holder) > 256 {
		return badRequest(`field "holder" must be 1 to 256 bytes (for example host name and process id)`)
	}
	if len(req.RequestID) > 128 {
		return badRequest(`field "request_id" must be at most 128 bytes`)
	}
	if req.ClientTimeMs < 0 {
		return badRequest(`field "client_time_ms" must be a Unix time in milliseconds, not negative`)
	}
	r := domain.LeaseRequest{Holder: req.Holder, RequestID: req.RequestID, ClientTimeMs: req.ClientTimeMs}
	if req.WorkerID != nil {
		if *req.WorkerID < 0 {
			return badRequest(fmt.Sprintf(`field "worker_id" must be a worker id (0 or more), got %d`, *req.WorkerID))
		}
		r.Chosen, r.WorkerID = true, *req.WorkerID
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	g, err := s.store.AcquireLease(ctx, c.Param("name"), r)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusCreated, leaseView(g.Lease, g.Namespace, true))
}

func workerParam(c echo.Context) (int64, error) {
	w, err := strconv.ParseInt(c.Param("worker"), 10, 64)
	if err != nil || w < 0 {
		return 0, badRequest(fmt.Sprintf("worker id %q is not a non-negative integer", c.Param("worker")))
	}
	return w, nil
}

func (s *Service) renewOrRelease(c echo.Context, release bool) error {
	w, err := workerParam(c)
	if err != nil {
		return err
	}
	var req api.LeaseTokenRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.Token == 0 {
		return badRequest(`field "token" is required: the token the lease was granted with`)
	}
	if req.ClientTimeMs < 0 {
		return badRequest(`field "client_time_ms" must be a Unix time in milliseconds, not negative`)
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	var g domain.LeaseGrant
	if release {
		g, err = s.store.ReleaseLease(ctx, c.Param("name"), w, req.Token)
	} else {
		g, err = s.store.RenewLease(ctx, c.Param("name"), w, req.Token, req.ClientTimeMs)
	}
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, leaseView(g.Lease, g.Namespace, true))
}

func (s *Service) renewLease(c echo.Context) error   { return s.renewOrRelease(c, false) }
func (s *Service) releaseLease(c echo.Context) error { return s.renewOrRelease(c, true) }

func (s *Service) revokeLease(c echo.Context) error {
	w, err := workerParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	g, err := s.store.ReleaseLease(ctx, c.Param("name"), w, 0)
	if err != nil {
		return s.storeError(c, err)
	}
	// The revoked lease's token is dead; the operator (admin) may see it.
	return c.JSON(http.StatusOK, leaseView(g.Lease, g.Namespace, true))
}

func (s *Service) listLeases(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	ls, n, err := s.store.Leases(ctx, c.Param("name"))
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.LeaseList{Leases: make([]api.Lease, 0, len(ls))}
	for _, l := range ls {
		out.Leases = append(out.Leases, leaseView(l, n, false))
	}
	return c.JSON(http.StatusOK, out)
}

// auditView is the wire form of an audit record (the same fields).
func auditView(r domain.AuditRecord) api.AuditRecord { return api.AuditRecord(r) }

func (s *Service) audit(c echo.Context) error {
	var after uint64
	if c.QueryParam("after_index") != "" {
		// Log indices restart in a cluster seeded from a backup; the
		// audit's own numbers do not.
		return badRequest(`query parameter "after_index" is gone: page with "after_seq", the "seq" of the last record seen`)
	}
	if v := c.QueryParam("after_seq"); v != "" {
		a, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return badRequest(fmt.Sprintf(`query parameter "after_seq" must be a non-negative integer, got %q`, v))
		}
		after = a
	}
	limit, err := pageLimit(c, 1000, 10_000)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	page, err := s.store.Audit(ctx, after, limit)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.AuditList{Records: make([]api.AuditRecord, 0, len(page.Records)), Retention: page.Retention}
	for _, r := range page.Records {
		out.Records = append(out.Records, auditView(r))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Service) auditCheck(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	rep, err := s.store.CheckAudit(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.AuditCheck{BlocksChecked: rep.Blocks, LeasesChecked: rep.Leases, Violations: []api.AuditViolation{}}
	for _, v := range rep.Violations {
		out.Violations = append(out.Violations, api.AuditViolation(v))
	}
	return c.JSON(http.StatusOK, out)
}

func idParam(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, badRequest(fmt.Sprintf("id %q is not a positive 64-bit integer", c.Param("id")))
	}
	return id, nil
}

func (s *Service) inspectSequence(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	in, err := s.store.InspectSequence(ctx, c.Param("name"), id)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.RangeInspection{Sequence: in.Sequence, ID: in.ID, Issued: in.Issued}
	if in.Block != nil {
		b := auditView(*in.Block)
		out.Block = &b
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Service) inspectSnowflake(c echo.Context) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	in, err := s.store.InspectSnowflake(ctx, c.Param("name"), id)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.SnowflakeInspection{
		Namespace: in.Namespace, ID: in.ID, TimeMs: in.TimeMs,
		Time:     time.UnixMilli(in.TimeMs).UTC().Format(time.RFC3339Nano),
		WorkerID: in.WorkerID, Sequence: in.Sequence, Holder: in.Holder, Found: in.Found,
		WorkerRole: in.WorkerRole,
	}
	if in.WorkerRole == api.WorkerRoleShard {
		shard := in.WorkerID
		out.Shard = &shard
	}
	return c.JSON(http.StatusOK, out)
}
