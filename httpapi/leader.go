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

// transferLeader serves POST /v1/cluster/leader on the serving leader
// (leaderOnly forwards it there).
func (s *Service) transferLeader(c echo.Context) error {
	var req api.LeaderTransferRequest
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
	return c.JSON(http.StatusOK, api.LeaderTransfer{Leader: leader, From: from, Transferred: leader != from})
}
