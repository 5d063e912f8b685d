package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/ticketd/ticketd/api"
)

// RaiseSequence lifts a sequence's high-water mark to at least atLeast, so
// that no ID the cluster hands out after the call returns is atLeast or
// below. A mark already there is left as it is (Raised false): a raise never
// lowers a mark, so calling it again, or with a smaller value, changes
// nothing. It needs the admin scope. A value above the sequence's maximum
// gives ErrExhausted, and one below 1 ErrInvalidArgument.
//
// This is the tool for a transition from another generator: a job that
// raises the sequence above the legacy generator's latest ID (plus a
// margin) keeps ticketd's IDs clear of the legacy ones while both write.
// Ranges reserved before the raise stay valid and are not taken back: a
// Sequence handle (Client.Sequence) goes on serving what it has cached,
// which may lie at or below atLeast. They were never the legacy
// generator's, so this is safe; a program that needs every later ID above
// atLeast makes a new handle after the raise.
func (c *Client) RaiseSequence(ctx context.Context, name string, atLeast int64) (api.RaiseSequenceResult, error) {
	var res api.RaiseSequenceResult
	if err := c.usable(ctx); err != nil {
		return res, err
	}
	if err := api.ValidateSequenceName(name); err != nil {
		return res, invalidf("%v", err)
	}
	if atLeast < 1 {
		return res, invalidf("at_least must be at least 1, got %d", atLeast)
	}
	body, _ := json.Marshal(api.RaiseSequenceRequest{AtLeast: atLeast})
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodPost, "/v1/sequences/"+api.PathSegment(name)+"/raise", body, &res, nil)
	return res, err
}
