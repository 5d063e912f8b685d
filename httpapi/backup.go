package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

func (s *Service) backup(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	// Buffered so that a failure can still be reported as a problem
	// rather than as a truncated 200. Backups are a few MB at most: one
	// record per sequence, namespace and lease, and the audit (at most
	// 20,000 records).
	var buf bytes.Buffer
	if err := s.store.Backup(ctx, &buf); err != nil {
		return s.storeError(c, err)
	}
	c.Response().Header().Set("Content-Disposition", `attachment; filename="ticketd.backup"`)
	return c.Blob(http.StatusOK, "application/octet-stream", buf.Bytes())
}

// bulkTransferTime is how long a backup or restore may take to send: the
// server's read and write timeouts are sized for small requests.
const bulkTransferTime = 10 * time.Minute

// bulk extends the connection's deadlines for a backup or restore, on the
// node that forwards it as on the leader.
func bulk(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rc := http.NewResponseController(c.Response())
		_ = rc.SetReadDeadline(time.Now().Add(bulkTransferTime))
		_ = rc.SetWriteDeadline(time.Now().Add(bulkTransferTime))
		return next(c)
	}
}

func (s *Service) restore(c echo.Context) error {
	adv := c.QueryParam("advance")
	if adv == "" {
		return badRequest(`query parameter "advance" is required: how far to lift every high-water mark above the backup's (see docs/operations.md, Backup and restore)`)
	}
	advance, err := strconv.ParseInt(adv, 10, 64)
	if err != nil || advance < 1 {
		return badRequest(fmt.Sprintf(`query parameter "advance" must be a positive integer, got %q`, adv))
	}
	body := http.MaxBytesReader(c.Response(), c.Request().Body, api.MaxBackupBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return problem(http.StatusRequestEntityTooLarge, api.ProblemTooLarge, "backup too large",
				fmt.Sprintf("a backup may be at most %d bytes", api.MaxBackupBytes))
		}
		return badRequest("could not read the backup: " + err.Error())
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.Restore(ctx, data, advance); err != nil {
		return s.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}
