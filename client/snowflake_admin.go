package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ticketd/ticketd/api"
)

// The Snowflake calls of a Client other than the generator's own: create a
// namespace, inspect an ID, list and revoke leases.

// CreateNamespace creates a Snowflake namespace with the given layout and
// lease policy (nil fields take the server's defaults; req.Preset names a
// layout such as api.PresetInstagram, shard-embedding IDs), or confirms that
// it exists with the same settings (created is then false). It needs an
// admin token. A namespace that exists with other settings gives
// ErrConflict. The cluster's warnings about a layout it accepted (its
// timestamp bits run out within its horizon_years) are logged at level
// Warn; CreateNamespaceWarnings returns them.
func (c *Client) CreateNamespace(ctx context.Context, name string, req api.NamespaceRequest) (ns api.Namespace, created bool, err error) {
	out, created, err := c.CreateNamespaceWarnings(ctx, name, req)
	for _, w := range out.Warnings {
		c.log.Warn("ticketd: "+w, "namespace", name)
	}
	return out.Namespace, created, err
}

// CreateNamespaceWarnings is CreateNamespace, returning the cluster's
// warnings about the layout (out.Warnings) instead of logging them.
func (c *Client) CreateNamespaceWarnings(ctx context.Context, name string, req api.NamespaceRequest) (out api.NamespaceCreated, created bool, err error) {
	if err := c.usable(ctx); err != nil {
		return out, false, err
	}
	if err := api.ValidateNewSequenceName(name); err != nil {
		return out, false, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	body, _ := json.Marshal(req)
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	status, err := c.roundTrip(ctx, http.MethodPut, "/v1/namespaces/"+api.PathSegment(name), body, &out, nil)
	return out, status == http.StatusCreated, snowflakeError(err)
}

// InspectSnowflake decodes a Snowflake ID of a namespace on the cluster:
// its time, worker id and sequence, and which lease holder had that worker
// id then (while the cluster's audit still has the grant).
func (c *Client) InspectSnowflake(ctx context.Context, namespace string, id int64) (api.SnowflakeInspection, error) {
	var out api.SnowflakeInspection
	if err := c.usable(ctx); err != nil {
		return out, err
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return out, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	if id < 1 {
		return out, invalidf("InspectSnowflake: id must be positive, got %d", id)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodGet, "/v1/inspect/snowflake/"+api.PathSegment(namespace)+"/"+strconv.FormatInt(id, 10), nil, &out, nil)
	return out, snowflakeError(err)
}

// Leases lists the latest lease of every worker id of a namespace.
func (c *Client) Leases(ctx context.Context, namespace string) ([]api.Lease, error) {
	var out api.LeaseList
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return nil, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodGet, "/v1/namespaces/"+api.PathSegment(namespace)+"/leases", nil, &out, nil)
	return out.Leases, snowflakeError(err)
}

// RevokeLease ends a worker id's lease whoever holds it (an operator's
// action; it needs an admin token). Its holder's next renewal is answered
// lease-lost, and the id rests for the namespace's recycle delay from now.
// A lease that is not held gives ErrLeaseLost.
func (c *Client) RevokeLease(ctx context.Context, namespace string, worker int64) (api.Lease, error) {
	var out api.Lease
	if err := c.usable(ctx); err != nil {
		return out, err
	}
	if err := api.ValidateSequenceName(namespace); err != nil {
		return out, fmt.Errorf("%w: namespace: %v", ErrInvalidArgument, err)
	}
	if worker < 0 {
		return out, invalidf("RevokeLease: negative worker id %d", worker)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodPost, "/v1/namespaces/"+api.PathSegment(namespace)+"/leases/"+strconv.FormatInt(worker, 10)+"/revoke", nil, &out, nil)
	return out, snowflakeError(err)
}
