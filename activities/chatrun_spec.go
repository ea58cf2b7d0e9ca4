package activities

import (
	"time"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/models"
)

// ChatRunSpec is what the chat run of a stored turn takes from the turn, its
// site and the configuration, the same on every path that starts one (the
// client and bot APIs, the messenger pulls): NewChatRunSpec builds it, and
// the run's input and a messenger's KefuTurn embed it.
type ChatRunSpec struct {
	ThreadID       string
	Turn           int
	TenantID       int64
	SiteID         int64 // 0: a turn of no site (the run's input names the sites it searches)
	ShowTrace      bool
	StartedAtMs    int64 // when the turn's request arrived
	TimeoutMs      int64 // the stream deadline, from StartedAtMs
	MaxIterations  int
	MaxEmpty       int
	SummaryTrigger int
	SummaryKeep    int
}

// NewChatRunSpec is the spec of turn of the thread on the site, whose
// request arrived at start.
func NewChatRunSpec(cfg *config.Config, site *models.Site, threadID string, turn int, start time.Time) ChatRunSpec {
	return ChatRunSpec{ThreadID: threadID, Turn: turn, TenantID: site.TenantID, SiteID: site.ID,
		ShowTrace: site.ShowPipelineTrace, StartedAtMs: start.UnixMilli(), TimeoutMs: cfg.ChatStreamTimeout().Milliseconds(),
		MaxIterations: cfg.AgentMaxIterations, MaxEmpty: cfg.AgentMaxConsecutiveEmpty,
		SummaryTrigger: cfg.AgentSummaryTriggerMsgCount, SummaryKeep: cfg.AgentSummaryKeepLastN}
}
