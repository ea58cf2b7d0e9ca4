package deps

import (
	"log/slog"

	"go.temporal.io/sdk/log"
)

// newTemporalLogger routes the Temporal SDK's logs into the process's JSON logger.
func newTemporalLogger(l *slog.Logger) log.Logger {
	return log.NewStructuredLogger(l.With("component", "temporal"))
}
