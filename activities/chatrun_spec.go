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
	// Version is the chat run's code version the turn was started for
	// (ChatRunVersion): the run takes the changes up to it from its input
	// instead of recording each with workflow.GetVersion, whose marker and
	// search-attribute upsert (a visibility write on the server) every turn
	// would pay. 0 in turns started before it.
	Version int
}

// ChatRunVersion is the version of the chat run that turns start with now
// (ChatRunSpec.Version). Raise it with each change to the run that a turn
// recorded before must not see, and test for it in the run.
const ChatRunVersion = 1

// NewChatRunSpec is the spec of turn of the thread on the site, whose
// request arrived at start.
func NewChatRunSpec(cfg *config.Config, site *models.Site, threadID string, turn int, start time.Time) ChatRunSpec {
	return ChatRunSpec{ThreadID: threadID, Turn: turn, TenantID: site.TenantID, SiteID: site.ID,
		ShowTrace: site.ShowPipelineTrace, StartedAtMs: start.UnixMilli(), TimeoutMs: cfg.ChatStreamTimeout().Milliseconds(),
		MaxIterations: cfg.AgentMaxIterations, MaxEmpty: cfg.AgentMaxConsecutiveEmpty,
		SummaryTrigger: cfg.AgentSummaryTriggerMsgCount, SummaryKeep: cfg.AgentSummaryKeepLastN, Version: ChatRunVersion}
}
