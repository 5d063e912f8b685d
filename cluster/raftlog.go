package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"

	"github.com/hashicorp/go-hclog"
)

// newRaftLogger returns an hclog.Logger whose lines go to log, so raft's
// messages share the node's handler, format and destination. hclog writes
// one JSON object per line; each becomes one slog record at the same level.
func newRaftLogger(log *slog.Logger, level slog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "raft",
		Level:      hclogLevel(level),
		Output:     &slogWriter{log: log},
		JSONFormat: true,
	})
}

type slogWriter struct{ log *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		w.writeLine(line)
	}
	return len(p), nil
}

func (w *slogWriter) writeLine(line []byte) {
	if len(line) == 0 {
		return
	}
	var rec map[string]any
	if err := json.Unmarshal(line, &rec); err != nil {
		w.log.Info(string(line))
		return
	}
	level := slog.LevelInfo
	switch rec["@level"] {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	msg, _ := rec["@message"].(string)
	keys := make([]string, 0, len(rec))
	for k := range rec {
		if k == "@level" || k == "@message" || k == "@timestamp" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		name := k
		if k == "@module" {
			name = "module"
		}
		attrs = append(attrs, slog.Any(name, rec[k]))
	}
	w.log.LogAttrs(context.Background(), level, msg, attrs...)
}

func hclogLevel(l slog.Level) hclog.Level {
	switch {
	case l <= slog.LevelDebug:
		return hclog.Debug
	case l <= slog.LevelInfo:
		return hclog.Info
	case l <= slog.LevelWarn:
		return hclog.Warn
	}
	return hclog.Error
}
