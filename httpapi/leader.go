package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// leaderTransferer moves leadership to a named voter (issue 43, G4: the
// Helm chart's scale-down hook moves it off a member before removing that
// member, to a voter it chose, not one raft picks). It is a separate
// interface, as standbyJoiner is, until every Store has it.
type leaderTransferer interface {
	// TransferLeadershipTo hands leadership to the voter to and returns
	// the ID of the node that leads once the transfer has finished. Asked
	// on the leader for its own ID it changes nothing and returns that ID.
	TransferLeadershipTo(ctx context.Context, to string) (leader string, err error)
}

// leaderTransferRequest is the body of POST /v1/cluster/leader.
type leaderTransferRequest struct {
	// To is the ID of the voter that should lead.
	To string `json:"to"`
}

// leaderTransferAnswer is what POST /v1/cluster/leader answers once the
// transfer has finished.
type leaderTransferAnswer struct {
	// Leader is the node that leads now: the one asked for.
	Leader string `json:"leader"`
	// From is the node that led when the request arrived.
	From string `json:"from"`
	// Transferred is false when From already was the node asked for:
	// nothing moved, and the answer is still 200, so that a retried
	// request finds its work done.
	Transferred bool `json:"transferred"`
}

// transferLeader serves POST /v1/cluster/leader on the serving leader
// (leaderOnly forwards it there).
func (s *Service) transferLeader(c echo.Context) error {
	var req leaderTransferRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.To == "" {
		return badRequest(`field "to" is required: the ID of the voter that should lead`)
	}
	lt, ok := s.store.(leaderTransferer)
	if !ok {
		return problem(http.StatusNotImplemented, api.ProblemBadRequest, "leadership transfer not supported", "this node cannot transfer leadership to a named voter")
	}
	from := s.store.ID()
	ctx, cancel := s.ctx(c)
	defer cancel()
	leader, err := lt.TransferLeadershipTo(ctx, req.To)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, leaderTransferAnswer{Leader: leader, From: from, Transferred: leader != from})
}
