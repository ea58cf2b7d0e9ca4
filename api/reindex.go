package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/api/workflowservice/v1"
)

// ReindexRequest is the body of documents:reindex.
type ReindexRequest struct {
	SiteID int64 `json:"site_id" doc:"the site to re-index; absent or 0: every site of the caller's tenant (admins only)" validate:"min=0"`
}

// SiteVectorStats is a site's indexing at a glance.
type SiteVectorStats struct {
	SiteID int64 `json:"site_id"`
	db.VectorStats
	// Active counts the documents queued or being indexed (pending +
	// processing).
	Active int `json:"active"`
	// RunningJobs counts the site's running jobs (Temporal visibility; 0
	// when it cannot be asked). The :watch stream lasts while it is above 0.
	RunningJobs int `json:"running_jobs"`
	// At is when the stats were read (GET only: the stream sends an event
	// when they change).
	At *time.Time `json:"at,omitempty"`
}

func (s *Server) reindexRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/documents:reindex", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Re-vectorize every published (or previously vectorized) document of a site, or of the tenant (admins), as one job of any size",
			Body:    ReindexRequest{}, Response: JobRef{}, Handler: s.reindex},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}/vector-stats", Tag: "sites", Perm: SiteAdminUp,
			Summary: "A site's indexing at a glance: documents by vector_status, chunks, outdated count, last error", Response: SiteVectorStats{}, Handler: s.vectorStats},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}/vector-stats:watch", Tag: "sites", Perm: SiteAdminUp, Raw: "text/event-stream",
			Summary: "Stream a site's vector stats as server-sent events (every 500 ms at most, on change) until no document is pending or processing", Handler: s.watchVectorStats},
	}
}

func (s *Server) reindex(c *fiber.Ctx) error {
	var in ReindexRequest
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	p := principal(c)
	meta := workflows.JobMeta{Kind: JobReindex, TenantID: p.User.TenantID}
	var id string
	if in.SiteID > 0 {
		st, err := s.adminSite(c, in.SiteID, SiteAdminUp)
		if err != nil {
			return err
		}
		meta.TenantID, meta.SiteID = st.TenantID, st.ID
		meta.Title = workflows.JobTitle("Re-index site", st.Name, "")
		id = workflows.ReindexSiteID(st.ID, shortID())
	} else {
		if !p.IsAdmin() {
			return Errf(http.StatusForbidden, "only admins re-index a whole tenant; name a site_id")
		}
		meta.Title = fmt.Sprintf("Re-index every site of tenant %d", meta.TenantID)
		id = workflows.ReindexTenantID(meta.TenantID, shortID())
	}
	jobID, err := s.startReindex(c, id, meta)
	if err != nil {
		return err
	}
	return ok(c, JobRef{JobID: jobID})
}

// startReindex starts a re-index job with the batch settings.
func (s *Server) startReindex(c *fiber.Ctx, id string, meta workflows.JobMeta) (string, error) {
	cfg := s.d.Cfg
	return s.startJob(c, jobStart{id: id, meta: meta, wf: workflows.Reindex,
		input: workflows.ReindexInput{TenantID: meta.TenantID, SiteID: meta.SiteID,
			GroupSize: cfg.BatchVectorizeGroup, Concurrency: cfg.BatchVectorizeConcurrency}})
}

// reindexAfterModelChange starts the tenant's re-index once a new embedding
// model has made its vectors outdated (automatic mode). The config change is
// committed, so a failure to start is logged, not answered: POST
// /documents:reindex starts it later.
func (s *Server) reindexAfterModelChange(c *fiber.Ctx, tenantID int64) *string {
	meta := workflows.JobMeta{Kind: JobReindex, TenantID: tenantID,
		Title: fmt.Sprintf("Re-index every site of tenant %d (new embedding model)", tenantID)}
	id, err := s.startReindex(c, workflows.ReindexTenantID(tenantID, shortID()), meta)
	if err != nil {
		s.log.Warn("re-index after an embedding model change not started", "tenant", tenantID, "err", err,
			"request_id", c.Locals(requestIDKey))
		return nil
	}
	return &id
}

// siteVectorStats reads the stats of the {id} site after the site check.
func (s *Server) siteVectorStats(c *fiber.Ctx) (*models.Site, *SiteVectorStats, error) {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return nil, nil, err
	}
	v, err := s.readVectorStats(c.UserContext(), st.ID)
	return st, v, err
}

func (s *Server) readVectorStats(ctx context.Context, siteID int64) (*SiteVectorStats, error) {
	vs, err := s.d.DB.SiteVectorStats(ctx, siteID)
	if err != nil {
		return nil, err
	}
	return &SiteVectorStats{SiteID: siteID, VectorStats: *vs, RunningJobs: s.runningJobs(ctx, siteID),
		Active: vs.ByStatus[models.VecPending] + vs.ByStatus[models.VecProcessing]}, nil
}

// runningJobs counts the site's running jobs through visibility.
func (s *Server) runningJobs(ctx context.Context, siteID int64) int {
	if s.d.Temporal == nil {
		return 0
	}
	q := jobFilter{kinds: workflows.JobKinds, siteID: siteID, statuses: []string{"Running"}}.visibilityQuery(nil)
	res, err := s.d.Temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: s.d.Cfg.TemporalNS, Query: q})
	if err != nil {
		return 0
	}
	return int(res.GetCount())
}

// watchGrace is how long a :watch stream waits for a just-started job to
// show in visibility while documents are queued.
const watchGrace = 3 * time.Second

func (s *Server) vectorStats(c *fiber.Ctx) error {
	_, v, err := s.siteVectorStats(c)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	v.At = &now
	return ok(c, v)
}

// watchVectorStats streams the stats while the site's jobs run (and, for
// the first seconds, while documents are queued: a job just started may not
// be visible yet); an event goes out only when they change. Documents left
// pending with no job behind them do not hold the stream open.
func (s *Server) watchVectorStats(c *fiber.Ctx) error {
	st, first, err := s.siteVectorStats(c)
	if err != nil {
		return err
	}
	start := time.Now()
	live := func(v *SiteVectorStats) bool {
		return v.RunningJobs > 0 || (v.Active > 0 && time.Since(start) < watchGrace)
	}
	s.streamViews(c, first, func(ctx context.Context) (any, bool, error) {
		v, err := s.readVectorStats(ctx, st.ID)
		if err != nil {
			return nil, false, err
		}
		return v, live(v), nil
	}, live(first))
	return nil
}
