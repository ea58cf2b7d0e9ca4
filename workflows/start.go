package workflows

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Starter starts workflows with what they are about. Each process builds
// one and passes it to whatever starts workflows (the API server, the
// worker's start-up pass), so it remembers for that process, without a
// global, that the engine refused Lore's search attributes (not registered
// on the namespace): later starts leave them out, and a refusal costs one
// extra round trip per process, not per start.
type Starter struct {
	log          *slog.Logger
	attrsMissing atomic.Bool
	// jobMissing: the namespace has the other attributes but not LoreJob
	// (set up before it existed, and not writable by this process).
	jobMissing atomic.Bool
}

// NewStarter returns a Starter that logs through log (nil: silent).
func NewStarter(log *slog.Logger) *Starter { return &Starter{log: log} }

// StartWithMeta starts a workflow (through start, given the options) with
// what it is about: the memo, the Web UI summary (the title) and the search
// attributes of meta, all in the one start request (no extra round trip,
// which matters for eager chat starts). When the engine refuses the
// attributes it logs once and starts again without them: jobs still run,
// they are only not listed by GET /jobs until `lore temporal setup`.
func StartWithMeta[T any](st *Starter, meta JobMeta, opts client.StartWorkflowOptions,
	start func(client.StartWorkflowOptions) (T, error)) (T, error) {
	opts.Memo = meta.Memo()
	if meta.Title != "" {
		opts.StaticSummary = meta.Title
	}
	if st.attrsMissing.Load() {
		return start(opts)
	}
	withJob := meta.Kind != "" && !st.jobMissing.Load()
	opts.TypedSearchAttributes = meta.searchAttributes(withJob)
	v, err := start(opts)
	if err == nil || !IsUnknownSearchAttr(err) {
		return v, err
	}
	if withJob {
		// The attributes of an older setup still list jobs: keep them.
		opts.TypedSearchAttributes = meta.searchAttributes(false)
		if v, err = start(opts); err == nil || !IsUnknownSearchAttr(err) {
			if err == nil && !st.jobMissing.Swap(true) && st.log != nil {
				st.log.Warn("Temporal search attribute LoreJob is not registered: workflows start without it (the Web UI's LoreJob = true query misses them); run `lore temporal setup`")
			}
			return v, err
		}
	}
	if !st.attrsMissing.Swap(true) && st.log != nil {
		st.log.Warn("Temporal search attributes are not registered: workflows start without them and GET /jobs cannot list them; run `lore temporal setup` (the dev server of temporal-dev.sh registers them)", "err", err)
	}
	opts.TypedSearchAttributes = temporal.SearchAttributes{}
	return start(opts)
}

// IsUnknownSearchAttr reports the engine's refusal of a search attribute
// that is not registered on the namespace.
func IsUnknownSearchAttr(err error) bool {
	var ia *serviceerror.InvalidArgument
	return errors.As(err, &ia) && strings.Contains(strings.ToLower(ia.Message), "search attribute")
}
