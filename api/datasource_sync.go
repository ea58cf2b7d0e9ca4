package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/datasource/gitsrc"
	"github.com/lorekb/lore/internal/datasource/websrc"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// SyncBody is the sync object of a git or web data source's create and
// update bodies.
type SyncBody struct {
	Schedule     *string  `json:"schedule" doc:"a cron expression (5 fields, or @hourly, @daily…) or @every <duration> (at least 1m); empty: only on request" validate:"omitempty,max=100"`
	CollectionID *int64   `json:"collection_id" doc:"the collection of the site the documents go in; 0 or null: none" validate:"omitempty,min=0"`
	Publish      *bool    `json:"publish" doc:"create the documents published (default false: drafts)"`
	DeleteShare  *float64 `json:"max_delete_share" doc:"share of the source's documents one run may delete before it stops and asks for confirm_deletions (default 0.3)" validate:"omitempty,gt=0,lte=1"`
}

// SyncView is how a data source syncs, with its last run.
type SyncView struct {
	Schedule     string   `json:"schedule"`
	ScheduleID   string   `json:"schedule_id,omitempty" doc:"the Temporal Schedule running it"`
	CollectionID *int64   `json:"collection_id"`
	Publish      bool     `json:"publish"`
	DeleteShare  float64  `json:"max_delete_share"`
	LastRun      *SyncRun `json:"last_run"`
}

// SyncRequest is the optional body of POST /data-sources/{id}:sync.
type SyncRequest struct {
	ConfirmDeletions bool `json:"confirm_deletions" doc:"let this run delete more than max_delete_share of the source's documents (the mass-deletion guard held them)"`
}

// SyncStarted answers POST /data-sources/{id}:sync.
type SyncStarted struct {
	JobID   string `json:"job_id" doc:"follow it at /jobs/{id}"`
	Running string `json:"running,omitempty" doc:"the job of a sync already running: this one waits for it"`
}

// SyncRun is one run as GET /data-sources/{id}/syncs lists it.
type SyncRun struct {
	ID         int64                       `json:"id"`
	JobID      string                      `json:"job_id"`
	Trigger    string                      `json:"trigger" enum:"manual,schedule"`
	Status     string                      `json:"status" enum:"waiting,running,completed,held,skipped,failed"`
	Ref        string                      `json:"ref" doc:"the commit synced (git)"`
	Added      int                         `json:"added"`
	Updated    int                         `json:"updated"`
	Deleted    int                         `json:"deleted"`
	Unchanged  int                         `json:"unchanged"`
	Failed     int                         `json:"failed"`
	Message    string                      `json:"message" doc:"why it waited, skipped, was held or failed"`
	Items      []activities.SyncItemResult `json:"items" doc:"the changed and failed items with their reasons (unchanged ones are only counted)"`
	CreatedAt  time.Time                   `json:"created_at"`
	StartedAt  *time.Time                  `json:"started_at"`
	FinishedAt *time.Time                  `json:"finished_at"`
}

func syncRunView(r *models.SyncRun) SyncRun {
	v := SyncRun{ID: r.ID, JobID: r.JobID, Trigger: r.Trigger, Status: r.Status, Ref: r.Ref, Added: r.Added, Updated: r.Updated,
		Deleted: r.Deleted, Unchanged: r.Unchanged, Failed: r.Failed, Message: r.Message, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Items: []activities.SyncItemResult{}}
	_ = json.Unmarshal([]byte(r.Items), &v.Items)
	return v
}

func (s *Server) dataSourceSyncRoutes() []Route {
	const one = "/data-sources/{id}"
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: one + ":sync", Tag: "data-sources", Perm: SiteAdminUp, Created: true,
			Summary: "Sync a git or web data source into its site now (one job; one sync of a data source at a time: this one waits for a running one)",
			Body:    SyncRequest{}, Response: SyncStarted{}, Handler: s.syncDataSource},
		{Surface: Admin, Method: http.MethodGet, Path: one + "/syncs", Tag: "data-sources", Perm: SiteAdminUp, Query: PageQuery{},
			Summary: "List a data source's sync runs, newest first, with their counts and per-item results", Response: Page[SyncRun]{}, Handler: s.listSyncs},
	}
}

// syncable reports whether a data source type syncs.
func syncable(t string) bool { return t == models.DataSourceGit || t == models.DataSourceWeb }

// gitConfig validates a git data source's config and reaches the
// repository (the branch exists, the token works): a 400 naming the
// problem now rather than a failed sync later.
func (s *Server) setGitConfig(c *fiber.Ctx, ds *models.DataSource, raw map[string]any) error {
	var cfg gitsrc.Config
	if err := decodeConfig(raw, &cfg); err != nil {
		return err
	}
	if err := s.d.Guard().CheckURL(cfg.URL); err != nil {
		return Invalid("config.url: %v", err)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 30*time.Second)
	defer cancel()
	cl := &gitsrc.Client{Transport: s.d.Outbound(), MaxBytes: 16 << 20}
	branch, err := cl.DefaultBranch(ctx, cfg)
	if err != nil {
		return BadRequest("the repository cannot be read: %s", redact(err.Error(), cfg.Token))
	}
	cfg.Branch = branch
	b, _ := json.Marshal(cfg)
	ds.Config = string(b)
	return nil
}

// setWebConfig validates a web data source's config; the guard checks the
// URL and the prefix's host.
func (s *Server) setWebConfig(ds *models.DataSource, raw map[string]any) error {
	var cfg websrc.Config
	if err := decodeConfig(raw, &cfg); err != nil {
		return err
	}
	if err := s.d.Guard().CheckURL(cfg.URL); err != nil {
		return Invalid("config.url: %v", err)
	}
	if err := s.d.Guard().CheckURL(cfg.Prefix); err != nil {
		return Invalid("config.prefix: %v", err)
	}
	b, _ := json.Marshal(cfg)
	ds.Config = string(b)
	return nil
}

// decodeConfig decodes a data source's config strictly (no unknown fields)
// and validates it; either failure is a 422 naming the problem.
func decodeConfig(raw map[string]any, into interface{ Validate() error }) error {
	b, _ := json.Marshal(raw)
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return Invalid("config: %v", err)
	}
	if err := into.Validate(); err != nil {
		return Invalid("%v", err)
	}
	return nil
}

// setSourceConfig sets the config of a git or web data source (merged with
// the stored one on update; a masked or omitted token keeps the stored one
// unless the URL changed).
func (s *Server) setSourceConfig(c *fiber.Ctx, ds *models.DataSource, raw map[string]any, update bool) error {
	if update {
		var old map[string]any
		_ = json.Unmarshal([]byte(ds.Config), &old)
		merged := map[string]any{}
		for k, v := range old {
			merged[k] = v
		}
		for k, v := range raw {
			merged[k] = v
		}
		if tok, _ := raw["token"].(string); ds.Type == models.DataSourceGit && (tok == "" || strings.Contains(tok, maskMarker)) {
			if u, _ := raw["url"].(string); u != "" && u != old["url"] && old["token"] != nil && old["token"] != "" {
				return Invalid("config.token: the url changed; send the token again")
			}
		}
		if err := restoreSecrets("config.", merged, old); err != nil {
			return err
		}
		raw = merged
	}
	if ds.Type == models.DataSourceGit {
		return s.setGitConfig(c, ds, raw)
	}
	return s.setWebConfig(ds, raw)
}

// everyRe is "@every <duration>".
var everyRe = regexp.MustCompile(`^@every\s+(\S+)$`)

// cronShape accepts what a Temporal Schedule's cron takes: five fields, or
// a predefined name; the engine checks the fields themselves when the
// schedule is saved.
var cronShape = regexp.MustCompile(`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|(\S+\s+){4}\S+)$`)

// scheduleSpec turns a schedule string into a Temporal Schedule spec.
func scheduleSpec(sched string) (client.ScheduleSpec, error) {
	sched = strings.TrimSpace(sched)
	if m := everyRe.FindStringSubmatch(sched); m != nil {
		d, err := time.ParseDuration(m[1])
		if err != nil || d < time.Minute || d > 366*24*time.Hour {
			return client.ScheduleSpec{}, Invalid("sync.schedule: @every takes a duration from 1m to 8784h (e.g. @every 6h)")
		}
		return client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: d}}}, nil
	}
	if !cronShape.MatchString(sched) {
		return client.ScheduleSpec{}, Invalid("sync.schedule: a cron expression of five fields (e.g. \"0 3 * * *\"), @hourly, @daily…, or @every <duration>")
	}
	return client.ScheduleSpec{CronExpressions: []string{sched}}, nil
}

// syncSettings applies a sync body to the settings (validated against the
// data source's site).
func (s *Server) syncSettings(c *fiber.Ctx, ds *models.DataSource, in *SyncBody, set *models.SyncSettings) error {
	if in == nil {
		return nil
	}
	if in.Schedule != nil {
		set.Schedule = strings.TrimSpace(*in.Schedule)
		if set.Schedule != "" {
			if _, err := scheduleSpec(set.Schedule); err != nil {
				return err
			}
		}
	}
	if in.CollectionID != nil {
		set.CollectionID = nil
		if *in.CollectionID > 0 {
			col, err := s.d.DB.GetCollection(c.UserContext(), *in.CollectionID)
			if errors.Is(err, db.ErrNotFound) || (err == nil && (ds.SiteID == nil || col.SiteID != *ds.SiteID)) {
				return BadRequest("sync.collection_id: collection %d does not exist in the data source's site", *in.CollectionID)
			}
			if err != nil {
				return err
			}
			set.CollectionID = &col.ID
		}
	}
	if in.Publish != nil {
		set.Publish = *in.Publish
	}
	if in.DeleteShare != nil {
		set.DeleteShare = *in.DeleteShare
	}
	return nil
}

// saveSync stores the settings and makes the data source's Temporal
// Schedule match them (created, updated, or deleted when the schedule is
// empty).
func (s *Server) saveSync(c *fiber.Ctx, ds *models.DataSource, set *models.SyncSettings) error {
	set.DataSourceID = ds.ID
	if set.DeleteShare <= 0 {
		set.DeleteShare = 0.3
	}
	if err := s.d.DB.SaveSyncSettings(c.UserContext(), set); err != nil {
		return err
	}
	return s.applySchedule(c, ds, set)
}

// syncMeta is what a sync job of the data source is about.
func (s *Server) syncMeta(c *fiber.Ctx, ds *models.DataSource) workflows.JobMeta {
	siteName := ""
	if site, err := s.d.DB.GetSite(c.UserContext(), *ds.SiteID); err == nil {
		siteName = site.Name
	}
	return workflows.JobMeta{Kind: workflows.KindSync, TenantID: ds.TenantID, SiteID: *ds.SiteID,
		Title: workflows.JobTitle("Sync", ds.Name, siteName)}
}

// applySchedule creates, updates or deletes the data source's schedule.
func (s *Server) applySchedule(c *fiber.Ctx, ds *models.DataSource, set *models.SyncSettings) error {
	ctx := c.UserContext()
	id := workflows.SyncScheduleID(ds.ID)
	if set.Schedule == "" {
		if s.d.Temporal != nil {
			s.deleteSchedule(ctx, ds.ID)
		}
		return nil
	}
	tc, err := s.temporalClient()
	if err != nil {
		return err
	}
	spec, err := scheduleSpec(set.Schedule)
	if err != nil {
		return err
	}
	meta := s.syncMeta(c, ds)
	in := workflows.SyncInput{DataSourceID: ds.ID, Trigger: workflows.TriggerSchedule, Title: meta.Title, Concurrency: s.d.Cfg.ImportConcurrency}
	action := &client.ScheduleWorkflowAction{ID: id, Workflow: workflows.SyncDataSource, Args: []any{in},
		TaskQueue: s.d.Cfg.TemporalQueue, Memo: meta.Memo(), TypedSearchAttributes: meta.SearchAttributes()}
	opts := client.ScheduleOptions{ID: id, Spec: spec, Action: action, Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Note: fmt.Sprintf("Sync of data source %d (%s)", ds.ID, clipName(ds.Name))}
	_, err = tc.ScheduleClient().Create(ctx, opts)
	if err != nil && workflows.IsUnknownSearchAttr(err) {
		action.TypedSearchAttributes = temporal.SearchAttributes{} // not registered on the namespace
		_, err = tc.ScheduleClient().Create(ctx, opts)
	}
	var exists *serviceerror.AlreadyExists
	if errors.As(err, &exists) || errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		err = workflows.UpdateSchedule(ctx, tc.ScheduleClient(), id, spec, action)
	}
	if err != nil {
		var ia *serviceerror.InvalidArgument
		if errors.As(err, &ia) {
			return Invalid("sync.schedule: %s", ia.Message)
		}
		return Unavailable("the schedule could not be saved: %v", err)
	}
	return nil
}

func clipName(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80])
	}
	return s
}

// deleteSchedule removes the data source's schedule, if any.
func (s *Server) deleteSchedule(ctx context.Context, dataSourceID int64) {
	if s.d.Temporal == nil {
		return
	}
	err := s.d.Temporal.ScheduleClient().GetHandle(ctx, workflows.SyncScheduleID(dataSourceID)).Delete(ctx)
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		s.log.Warn("sync schedule not deleted", "data_source_id", dataSourceID, "err", err)
	}
}

// syncView is the data source's sync settings and last run (nil for the
// types that do not sync).
func (s *Server) syncView(ctx context.Context, ds *models.DataSource) *SyncView {
	if !syncable(ds.Type) {
		return nil
	}
	v := &SyncView{DeleteShare: 0.3}
	if set, err := s.d.DB.GetSyncSettings(ctx, ds.ID); err == nil {
		v.Schedule, v.CollectionID, v.Publish, v.DeleteShare = set.Schedule, set.CollectionID, set.Publish, set.DeleteShare
		if set.Schedule != "" {
			v.ScheduleID = workflows.SyncScheduleID(ds.ID)
		}
	}
	if runs, _, err := s.d.DB.ListSyncRuns(ctx, ds.ID, 1, 0); err == nil && len(runs) == 1 {
		r := syncRunView(&runs[0])
		r.Items = nil
		v.LastRun = &r
	}
	return v
}

func (s *Server) syncDataSource(c *fiber.Ctx) error {
	ds, err := s.loadDataSource(c)
	if err != nil {
		return err
	}
	if !syncable(ds.Type) || ds.SiteID == nil {
		return BadRequest("data source %d is of type %s: only git and web data sources of a site sync", ds.ID, ds.Type)
	}
	var in SyncRequest
	if len(c.Body()) > 0 {
		if err := bindJSON(c, &in); err != nil {
			return err
		}
	}
	if _, err := s.temporalClient(); err != nil {
		return err
	}
	meta := s.syncMeta(c, ds)
	id := workflows.SyncID(ds.ID, shortID())
	input := workflows.SyncInput{DataSourceID: ds.ID, Trigger: workflows.TriggerManual, ConfirmDeletions: in.ConfirmDeletions,
		Title: meta.Title, Concurrency: s.d.Cfg.ImportConcurrency}
	if _, err := s.startJob(c, jobStart{id: id, meta: meta, wf: workflows.SyncDataSource, input: input, eager: true}); err != nil {
		return err
	}
	out := SyncStarted{JobID: id}
	if r, err := s.d.DB.RunningSync(c.UserContext(), ds.ID); err == nil && r.JobID != id {
		out.Running = r.JobID
	}
	return created(c, out)
}

func (s *Server) listSyncs(c *fiber.Ctx) error {
	var q PageQuery
	ds, err := loadThenBind(c, s.loadDataSource, listPage(20, 100), &q)
	if err != nil {
		return err
	}
	rows, total, err := s.d.DB.ListSyncRuns(c.UserContext(), ds.ID, q.Limit(), q.Offset())
	if err != nil {
		return err
	}
	out := make([]SyncRun, len(rows))
	for i := range rows {
		out[i] = syncRunView(&rows[i])
	}
	return paged(c, out, total, q)
}

// syncProvenance is a synced document's provenance for its admin view:
// where it came from and whether it was edited in Lore since (the edit
// rule says what the next sync does then).
func (s *Server) syncProvenance(ctx context.Context, doc *models.Document) map[string]any {
	it, err := s.d.DB.SyncItemOfDocument(ctx, doc.ID)
	if err != nil {
		return nil
	}
	out := map[string]any{"data_source_id": it.DataSourceID, "key": it.Key, "ref": it.Ref, "synced_at": it.SyncedAt,
		"synced_revision": it.SyncedRevision, "edited_in_lore": it.SyncedRevision > 0 && doc.ContentVersion > it.SyncedRevision,
		"edit_rule": activities.EditRule}
	if it.ETag != "" {
		out["etag"] = it.ETag
	}
	if it.LastModified != "" {
		out["last_modified"] = it.LastModified
	}
	return out
}
