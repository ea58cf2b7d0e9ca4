package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/datasource/gitsrc"
	"github.com/lorekb/lore/internal/datasource/websrc"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/models"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"
)

// Sync holds the activities of a data source sync (git and web): it reads
// the source, converts what changed through the import's path and writes
// documents keyed by (data source, item key), so a retried activity never
// writes a second document.
type Sync struct {
	D      *deps.Deps
	Import *Import // the conversion path the import takes
}

// Kinds of change a plan lists.
const (
	SyncAdd    = "add"
	SyncUpdate = "update"
	SyncRename = "rename"
	SyncDelete = "delete"
	SyncCheck  = "check" // a page to fetch (web): its outcome says what changed
)

// Outcomes of an item.
const (
	SyncAdded     = "added"
	SyncUpdated   = "updated"
	SyncRenamed   = "renamed"
	SyncDeleted   = "deleted"
	SyncUnchanged = "unchanged"
	SyncFailed    = "failed"
	SyncGone      = "gone" // a page that answered 404 or 410 (deleted at the end of the run)
)

// MaxSyncItems bounds the files or pages of one data source.
const MaxSyncItems = 5000

// EditRule is the rule a synced document follows when edited in Lore (shown
// in its provenance; docs/sync.md).
const EditRule = "source wins: an edit made in Lore is kept until the file or page changes at the source; the next sync then replaces it"

// SyncChange is one item of a plan.
type SyncChange struct {
	Key        string
	Op         string
	Version    string `json:",omitempty"` // the Git blob id
	From       string `json:",omitempty"` // a rename's old key
	DocumentID int64  `json:",omitempty"`
	Size       int64  `json:",omitempty"`
}

// SyncItemResult is the outcome of one item.
type SyncItemResult struct {
	Key        string `json:"key"`
	Outcome    string `json:"outcome" enum:"added,updated,renamed,deleted,unchanged,failed,gone"`
	DocumentID int64  `json:"document_id,omitempty"`
	Title      string `json:"title,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Note       string `json:"note,omitempty"`
	// Links are a crawled page's links under the prefix (web, start-page
	// mode): the workflow follows them.
	Links []string `json:"links,omitempty"`
}

// SyncSpec is what every activity of one run shares.
type SyncSpec struct {
	RunID        int64
	JobID        string
	DataSourceID int64
	TenantID     int64
	SiteID       int64
	Type         string
	Ref          string // git: the commit being synced
	CollectionID *int64
	Status       string // draft | published
	Vectorize    bool
	Name         string // the data source's name (author of the documents)
}

// SyncBeginInput starts a run.
type SyncBeginInput struct {
	DataSourceID int64
	JobID        string
	Trigger      string
	Title        string
}

// SyncBeginResult is the run and, when another run holds the data source,
// that run's job id.
type SyncBeginResult struct {
	Spec   SyncSpec
	Holder string
}

// ErrSyncSource is the application error type of a run that cannot read its
// source (not retried: the run fails with the reason).
const ErrSyncSource = "SyncSourceFailed"

func syncFailure(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrSyncSource, nil)
}

// SyncBegin records the run (and its job row, so a scheduled run shows at
// /jobs/{id}) and makes it the data source's running sync, unless another
// one holds it. A holder whose workflow no longer runs (terminated) is
// marked failed and the data source taken over.
func (a *Sync) SyncBegin(ctx context.Context, in SyncBeginInput) (SyncBeginResult, error) {
	ds, err := a.D.DB.GetDataSource(ctx, in.DataSourceID)
	if errors.Is(err, db.ErrNotFound) {
		return SyncBeginResult{}, syncFailure("data source %d no longer exists", in.DataSourceID)
	}
	if err != nil {
		return SyncBeginResult{}, err
	}
	if ds.SiteID == nil || (ds.Type != models.DataSourceGit && ds.Type != models.DataSourceWeb) {
		return SyncBeginResult{}, syncFailure("data source %d is not a git or web data source of a site", ds.ID)
	}
	set, err := a.D.DB.GetSyncSettings(ctx, ds.ID)
	if errors.Is(err, db.ErrNotFound) {
		set, err = &models.SyncSettings{DataSourceID: ds.ID, DeleteShare: 0.3}, nil
	}
	if err != nil {
		return SyncBeginResult{}, err
	}
	if _, err := a.D.DB.GetJob(ctx, in.JobID); errors.Is(err, db.ErrNotFound) {
		sub, _ := json.Marshal(map[string]any{"DataSourceID": ds.ID, "Trigger": in.Trigger})
		if err := a.D.DB.SaveJob(ctx, &models.Job{ID: in.JobID, Kind: "sync", WorkflowID: in.JobID, Subject: string(sub),
			TenantID: ds.TenantID, SiteID: *ds.SiteID, Title: in.Title}); err != nil {
			return SyncBeginResult{}, err
		}
	}
	spec := SyncSpec{JobID: in.JobID, DataSourceID: ds.ID, TenantID: ds.TenantID, SiteID: *ds.SiteID, Type: ds.Type,
		CollectionID: set.CollectionID, Status: models.DocDraft, Name: ds.Name}
	if set.Publish {
		spec.Status = models.DocPublished
		ai, err := a.D.AIConfig(ctx, ds.TenantID)
		spec.Vectorize = err == nil && ai.VectorizeMode != deps.ModeManual
	}
	run := &models.SyncRun{DataSourceID: ds.ID, TenantID: ds.TenantID, SiteID: *ds.SiteID, JobID: in.JobID, Trigger: in.Trigger}
	for range 3 {
		holder, err := a.D.DB.BeginSyncRun(ctx, run)
		if err != nil {
			return SyncBeginResult{}, err
		}
		spec.RunID = run.ID
		if holder == nil || holder.JobID == in.JobID {
			return SyncBeginResult{Spec: spec}, nil
		}
		if a.alive(ctx, holder.JobID) {
			return SyncBeginResult{Spec: spec, Holder: holder.JobID}, nil
		}
		holder.Status, holder.Message = models.SyncFailed, "its workflow ended without finishing the run"
		if err := a.D.DB.FinishSyncRun(ctx, holder); err != nil {
			return SyncBeginResult{}, err
		}
	}
	return SyncBeginResult{}, errors.New("the data source's running sync could not be taken over")
}

// alive reports whether a run's workflow still runs (true when the engine
// cannot tell: the run is then waited for, never taken over).
func (a *Sync) alive(ctx context.Context, jobID string) bool {
	if a.D.Temporal == nil {
		return true
	}
	desc, err := a.D.Temporal.DescribeWorkflowExecution(ctx, jobID, "")
	if err != nil {
		return !strings.Contains(strings.ToLower(err.Error()), "not found")
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// SyncPlanInput asks for a run's plan.
type SyncPlanInput struct {
	Spec             SyncSpec
	ConfirmDeletions bool
}

// SyncPlan is what a run will do: git, the changes between the items last
// synced and the branch's head; web, the pages to check.
type SyncPlan struct {
	Ref       string
	Changes   []SyncChange
	Unchanged int
	Existing  int // the source's items before the run
	// Held says why the plan's deletions wait for a confirmation ("" when
	// they do not); HeldDeletions counts them.
	Held          string `json:",omitempty"`
	HeldDeletions int    `json:",omitempty"`
	DeleteShare   float64
	// Web: the known pages (their items), the crawl's bounds and rules.
	Known    []string       `json:",omitempty"`
	Crawl    bool           `json:",omitempty"`
	MaxPages int            `json:",omitempty"`
	Prefix   string         `json:",omitempty"`
	Robots   *websrc.Robots `json:",omitempty"`
	Failed   []SyncItemResult
	// Incomplete: a sitemap of the index could not be read, so a known page
	// it no longer lists is not taken for deleted.
	Incomplete bool `json:",omitempty"`
}

// gitClient reaches repositories through the outbound guard, with the
// clones cached under the data directory.
func (a *Sync) gitClient() *gitsrc.Client {
	return &gitsrc.Client{Transport: a.D.Outbound(), MaxBytes: 1 << 30, CacheDir: filepath.Join(a.D.Cfg.DataDir, "sync", "git")}
}

func (a *Sync) source(ctx context.Context, spec SyncSpec) (*models.DataSource, error) {
	ds, err := a.D.DB.GetDataSource(ctx, spec.DataSourceID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && ds.TenantID != spec.TenantID) {
		return nil, syncFailure("data source %d no longer exists", spec.DataSourceID)
	}
	return ds, err
}

// SyncPlan reads the source and the items last synced and says what to do.
func (a *Sync) SyncPlan(ctx context.Context, in SyncPlanInput) (SyncPlan, error) {
	ds, err := a.source(ctx, in.Spec)
	if err != nil {
		return SyncPlan{}, err
	}
	set, err := a.D.DB.GetSyncSettings(ctx, ds.ID)
	share := 0.3
	if err == nil && set.DeleteShare > 0 {
		share = set.DeleteShare
	}
	items, err := a.D.DB.SyncItems(ctx, ds.ID, 0)
	if err != nil {
		return SyncPlan{}, err
	}
	stop := heartbeatEvery(ctx, 5*time.Second, nil)
	defer stop()
	if ds.Type == models.DataSourceWeb {
		return a.planWeb(ctx, ds, items, share)
	}
	var cfg gitsrc.Config
	if err := json.Unmarshal([]byte(ds.Config), &cfg); err != nil {
		return SyncPlan{}, syncFailure("config: %v", err)
	}
	repo, err := a.gitClient().Open(ctx, ds.ID, cfg, true, "")
	if err != nil {
		return SyncPlan{}, a.sourceError(ctx, "the repository could not be fetched: %v", err)
	}
	head, err := repo.Head()
	if err != nil {
		return SyncPlan{}, syncFailure("%v", err)
	}
	match := cfg.Matcher()
	formats := map[string]bool{}
	for _, f := range builtinConverters().Formats() {
		formats[f] = true
	}
	files, err := repo.Files(head, func(p string) bool { return match(p) && formats[convert.Ext(p)] }, MaxSyncItems)
	if err != nil {
		return SyncPlan{}, syncFailure("%v", err)
	}
	plan := PlanGit(files, items)
	plan.Ref, plan.DeleteShare = head, share
	plan.guard(in.ConfirmDeletions)
	return plan, nil
}

// sourceError is a source that cannot be read: a refused address, a bound
// or a missing branch fail the run at once; a network failure is retried.
func (a *Sync) sourceError(_ context.Context, format string, err error) error {
	msg := err.Error()
	if errors.Is(err, gitsrc.ErrTooLarge) || strings.Contains(msg, "address not allowed") || strings.Contains(msg, "refused the credentials") ||
		strings.Contains(msg, "not found") || strings.Contains(msg, "couldn't find remote ref") {
		return syncFailure(format, err)
	}
	return fmt.Errorf(format, err)
}

// PlanGit compares a commit's files with the items last synced: new paths
// are added, paths whose blob changed updated, missing ones deleted, and a
// deleted path whose blob reappears under a new path is a rename (the
// document stays).
func PlanGit(files []gitsrc.File, items []models.SyncItem) SyncPlan {
	have := make(map[string]models.SyncItem, len(items))
	for _, it := range items {
		have[it.Key] = it
	}
	now := make(map[string]bool, len(files))
	plan := SyncPlan{Existing: len(items)}
	var adds []SyncChange
	for _, f := range files {
		now[f.Path] = true
		it, ok := have[f.Path]
		switch {
		case !ok:
			adds = append(adds, SyncChange{Key: f.Path, Op: SyncAdd, Version: f.Blob, Size: f.Size})
		case it.Version != f.Blob:
			plan.Changes = append(plan.Changes, SyncChange{Key: f.Path, Op: SyncUpdate, Version: f.Blob, Size: f.Size, DocumentID: it.DocumentID})
		default:
			plan.Unchanged++
		}
	}
	gone := map[string][]models.SyncItem{} // blob → deleted items, by key
	for _, it := range items {
		if !now[it.Key] {
			gone[it.Version] = append(gone[it.Version], it)
		}
	}
	for _, c := range adds {
		if g := gone[c.Version]; len(g) > 0 {
			c.Op, c.From, c.DocumentID = SyncRename, g[0].Key, g[0].DocumentID
			gone[c.Version] = g[1:]
		}
		plan.Changes = append(plan.Changes, c)
	}
	var dels []SyncChange
	for _, g := range gone {
		for _, it := range g {
			dels = append(dels, SyncChange{Key: it.Key, Op: SyncDelete, DocumentID: it.DocumentID})
		}
	}
	sort.Slice(dels, func(i, j int) bool { return dels[i].Key < dels[j].Key })
	plan.Changes = append(plan.Changes, dels...)
	return plan
}

// guard holds the plan's deletions when they are more than the allowed
// share of the source's documents and nobody confirmed them.
func (p *SyncPlan) guard(confirmed bool) {
	n := 0
	for _, c := range p.Changes {
		if c.Op == SyncDelete {
			n++
		}
	}
	if confirmed || n == 0 || float64(n) <= p.DeleteShare*float64(p.Existing) {
		return
	}
	p.Held, p.HeldDeletions = MassDeletionMessage(n, p.Existing, p.DeleteShare), n
	kept := p.Changes[:0]
	for _, c := range p.Changes {
		if c.Op != SyncDelete {
			kept = append(kept, c)
		}
	}
	p.Changes = kept
}

// MassDeletionMessage says why a run's deletions wait.
func MassDeletionMessage(n, of int, share float64) string {
	return fmt.Sprintf("mass-deletion guard: this run would delete %d of the source's %d documents, more than the %.0f%% one run may delete; nothing was deleted. Confirm with POST /data-sources/{id}:sync {\"confirm_deletions\": true}",
		n, of, share*100)
}

// webConfig reads a web data source's config.
func webConfig(ds *models.DataSource) (websrc.Config, error) {
	var cfg websrc.Config
	if err := json.Unmarshal([]byte(ds.Config), &cfg); err != nil {
		return cfg, syncFailure("config: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, syncFailure("%v", err)
	}
	return cfg, nil
}

func (a *Sync) fetcher(cfg websrc.Config, maxBytes int64) *websrc.Fetcher {
	return &websrc.Fetcher{Client: &http.Client{Transport: a.D.Outbound(), CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}, MaxBytes: maxBytes, Timeout: time.Duration(cfg.TimeoutMS) * time.Millisecond, UserAgent: websrc.Agent + "/1.0 (+Lore sync)"}
}

// planWeb reads robots.txt and the sitemap (or takes the start page): the
// pages to check, and the pages known from the last runs.
func (a *Sync) planWeb(ctx context.Context, ds *models.DataSource, items []models.SyncItem, share float64) (SyncPlan, error) {
	cfg, err := webConfig(ds)
	if err != nil {
		return SyncPlan{}, err
	}
	f := a.fetcher(cfg, 10<<20)
	plan := SyncPlan{Existing: len(items), DeleteShare: share, MaxPages: cfg.MaxPages, Prefix: cfg.Prefix}
	for _, it := range items {
		plan.Known = append(plan.Known, it.Key)
	}
	plan.Robots = f.FetchRobots(ctx, cfg.URL)
	if plan.Robots.Closed != "" {
		return SyncPlan{}, syncFailure("the site's %s; nothing may be fetched", plan.Robots.Closed)
	}
	if !cfg.IsSitemap() {
		plan.Crawl = true
		plan.Changes = []SyncChange{{Key: cfg.URL, Op: SyncCheck}}
		return plan, nil
	}
	seen := map[string]bool{}
	queue := []string{cfg.URL}
	for fetched := 0; len(queue) > 0 && fetched < websrc.MaxSitemaps; fetched++ {
		sm := queue[0]
		queue = queue[1:]
		page, err := f.Get(ctx, sm, "", "", siteRoot(sm))
		if err == nil && page.Gone {
			err = fmt.Errorf("HTTP %d", page.Status)
		}
		if err != nil {
			if sm == cfg.URL {
				return SyncPlan{}, a.sourceError(ctx, "the sitemap could not be read: %v", err)
			}
			plan.Failed = append(plan.Failed, SyncItemResult{Key: sm, Outcome: SyncFailed, Reason: "sitemap: " + err.Error()})
			plan.Incomplete = true
			continue
		}
		pages, more, err := websrc.ParseSitemap(page.Body)
		if err != nil {
			if sm == cfg.URL {
				return SyncPlan{}, syncFailure("%s: %v", sm, err)
			}
			plan.Failed = append(plan.Failed, SyncItemResult{Key: sm, Outcome: SyncFailed, Reason: err.Error()})
			plan.Incomplete = true
			continue
		}
		queue = append(queue, more...)
		for _, p := range pages {
			key, ok := pageKey(p, cfg.Prefix)
			if !ok || seen[key] {
				continue
			}
			if !plan.Robots.Allowed(key) {
				seen[key] = true
				plan.Failed = append(plan.Failed, SyncItemResult{Key: key, Outcome: SyncFailed, Reason: key + ": robots.txt disallows it"})
				continue
			}
			if len(plan.Changes) >= cfg.MaxPages {
				break
			}
			seen[key] = true
			plan.Changes = append(plan.Changes, SyncChange{Key: key, Op: SyncCheck})
		}
	}
	return plan, nil
}

// siteRoot is the prefix a sitemap's redirects may go to: its own site.
func siteRoot(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	if j := strings.IndexByte(raw[i+3:], '/'); j >= 0 {
		return raw[:i+3+j+1]
	}
	return raw + "/"
}

// pageKey normalises a listed page and checks it is under the prefix.
func pageKey(raw, prefix string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", false
	}
	k := websrc.Normalize(u)
	return k, websrc.Under(k, prefix) && len(k) <= websrc.MaxURLLen
}

// SyncApplyInput is a batch of changes.
type SyncApplyInput struct {
	Spec        SyncSpec
	Changes     []SyncChange
	Concurrency int
	MaxAttempts int32 `json:",omitempty"`
	// Web: the rules and prefix the pages are checked against.
	Robots *websrc.Robots `json:",omitempty"`
	Crawl  bool           `json:",omitempty"`
}

// SyncApplyResult has one item per change, in the batch's order.
type SyncApplyResult struct {
	Items []SyncItemResult
}

// converted is one change read and converted, ready to be written.
type converted struct {
	i    int
	doc  *models.Document
	item *models.SyncItem
}

// SyncApply reads, converts and writes a batch of changes. A file or page
// that cannot be read or converted fails alone with its reason; a database
// error fails the attempt, and the retry finds what the earlier one wrote
// (items keyed by data source and key) and writes nothing twice.
func (a *Sync) SyncApply(ctx context.Context, in SyncApplyInput) (SyncApplyResult, error) {
	stop := heartbeatEvery(ctx, 5*time.Second, nil)
	defer stop()
	ds, err := a.source(ctx, in.Spec)
	if err != nil {
		return SyncApplyResult{}, err
	}
	keys := make([]string, 0, len(in.Changes))
	for _, c := range in.Changes {
		keys = append(keys, c.Key)
		if c.From != "" {
			keys = append(keys, c.From)
		}
	}
	have, err := a.D.DB.SyncItemsByKey(ctx, ds.ID, keys)
	if err != nil {
		return SyncApplyResult{}, err
	}
	conv, err := a.Import.converter(ctx, ImportSpec{TenantID: in.Spec.TenantID})
	if err != nil {
		return SyncApplyResult{}, err
	}
	out := make([]SyncItemResult, len(in.Changes))
	ready := make([]*converted, len(in.Changes))
	if ds.Type == models.DataSourceWeb {
		err = a.readPages(ctx, ds, in, have, conv, out, ready)
	} else {
		err = a.readFiles(ctx, ds, in, have, conv, out, ready)
	}
	if err != nil {
		return SyncApplyResult{}, err
	}
	if err := a.write(ctx, in.Spec, have, out, ready); err != nil {
		return SyncApplyResult{}, err
	}
	return SyncApplyResult{Items: out}, nil
}

// readFiles reads and converts a batch of Git changes; renames are written
// at once (no conversion).
func (a *Sync) readFiles(ctx context.Context, ds *models.DataSource, in SyncApplyInput, have map[string]models.SyncItem,
	conv convert.Converter, out []SyncItemResult, ready []*converted) error {
	var cfg gitsrc.Config
	if err := json.Unmarshal([]byte(ds.Config), &cfg); err != nil {
		return syncFailure("config: %v", err)
	}
	repo, err := a.gitClient().Open(ctx, ds.ID, cfg, false, in.Spec.Ref)
	if err != nil {
		return a.sourceError(ctx, "the repository could not be fetched: %v", err)
	}
	maxBytes := a.D.Cfg.ImportMaxBytes
	var g errgroup.Group
	g.SetLimit(max(in.Concurrency, 1))
	for i, c := range in.Changes {
		out[i] = SyncItemResult{Key: c.Key, DocumentID: c.DocumentID}
		if c.Op == SyncRename {
			if err := a.rename(ctx, in.Spec, have, c, &out[i]); err != nil {
				return err
			}
			continue
		}
		if it, ok := have[c.Key]; ok && it.Version == c.Version && it.RunID == in.Spec.RunID {
			out[i].Outcome, out[i].DocumentID = outcomeOf(c.Op), it.DocumentID // an earlier attempt wrote it
			continue
		}
		g.Go(func() error {
			data, err := repo.ReadBlob(c.Version, maxBytes)
			if err != nil {
				out[i].Outcome, out[i].Reason = SyncFailed, c.Key+": "+err.Error()
				return nil
			}
			doc, err := a.convertItem(ctx, conv, in.Spec, c.Key, path.Base(c.Key), data,
				map[string]any{"path": c.Key, "commit": in.Spec.Ref, "url": cfg.URL, "branch": cfg.Branch})
			if err != nil {
				out[i].Outcome, out[i].Reason = SyncFailed, failureReason(err)
				return nil
			}
			ready[i] = &converted{i: i, doc: doc, item: &models.SyncItem{DataSourceID: ds.ID, Key: c.Key, SiteID: in.Spec.SiteID,
				Version: c.Version, Ref: in.Spec.Ref, RunID: in.Spec.RunID, Links: "[]"}}
			return nil
		})
	}
	return g.Wait()
}

func outcomeOf(op string) string {
	switch op {
	case SyncAdd:
		return SyncAdded
	case SyncUpdate:
		return SyncUpdated
	case SyncRename:
		return SyncRenamed
	case SyncDelete:
		return SyncDeleted
	}
	return SyncUnchanged
}

// rename moves an item to its new path; the document keeps its id, content
// and vectors, and its provenance names the new path.
func (a *Sync) rename(ctx context.Context, spec SyncSpec, have map[string]models.SyncItem, c SyncChange, out *SyncItemResult) error {
	old, ok := have[c.From]
	if !ok {
		if it, done := have[c.Key]; done {
			out.Outcome, out.DocumentID = SyncRenamed, it.DocumentID // an earlier attempt moved it
			return nil
		}
		out.Outcome, out.Reason = SyncFailed, c.Key+": the renamed file's item is gone"
		return nil
	}
	it := old
	it.Key, it.Ref, it.RunID = c.Key, spec.Ref, spec.RunID
	if err := a.D.DB.RenameSyncItem(ctx, spec.DataSourceID, c.From, &it); err != nil {
		return err
	}
	if doc, err := a.D.DB.GetDocument(ctx, old.DocumentID); err == nil {
		_ = a.D.DB.SetDocumentParseMeta(ctx, doc.ID, withProvenance(doc.ParseMeta, spec, map[string]any{"path": c.Key, "commit": spec.Ref,
			"renamed_from": c.From}, it.SyncedRevision))
		out.Title = doc.Title
	}
	out.Outcome, out.DocumentID = SyncRenamed, old.DocumentID
	return nil
}

// convertItem converts an item's bytes through the import's path (the
// built-in converters, images stored as files of the site) into a document
// row carrying its provenance.
func (a *Sync) convertItem(ctx context.Context, conv convert.Converter, spec SyncSpec, key, name string, data []byte, prov map[string]any) (*models.Document, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	in := ImportFileInput{Spec: ImportSpec{ImportID: fmt.Sprintf("sync-ds-%d", spec.DataSourceID), TenantID: spec.TenantID, SiteID: spec.SiteID,
		CollectionID: spec.CollectionID, Status: spec.Status, Vectorize: spec.Vectorize, Author: spec.Name, MaxBytes: a.D.Cfg.ImportMaxBytes,
		Options: map[string]any{"extract_images": true, "extract_tables": true}},
		Index: int(h.Sum32() & 0x7fffffff), File: ImportFile{Name: name, Source: SourceDataSource, DataSourceID: spec.DataSourceID, Key: key}}
	doc, _, err := a.Import.prepareData(ctx, conv, in, data)
	if err != nil {
		return nil, err
	}
	doc.ParseMeta = strPtr(withProvenance(doc.ParseMeta, spec, prov, 0))
	return doc, nil
}

func strPtr(s string) *string { return &s }

// withProvenance sets parse_meta.sync: where the document came from, when,
// the revision the sync wrote (a later one was edited in Lore) and the
// edit rule.
func withProvenance(meta *string, spec SyncSpec, prov map[string]any, revision int64) string {
	m := map[string]any{}
	if meta != nil {
		_ = json.Unmarshal([]byte(*meta), &m)
	}
	p, _ := m["sync"].(map[string]any)
	if p == nil {
		p = map[string]any{}
	}
	for k, v := range map[string]any{"data_source_id": spec.DataSourceID, "type": spec.Type, "synced_at": time.Now().UTC().Format(time.RFC3339),
		"run_id": spec.RunID, "edit_rule": EditRule} {
		p[k] = v
	}
	if revision > 0 {
		p["revision"] = revision
	}
	for k, v := range prov {
		if s, ok := v.(string); !ok || s != "" {
			p[k] = v
		}
	}
	m["sync"] = p
	b, _ := json.Marshal(m)
	return string(b)
}

// write stores the converted items: new ones with their documents in one
// transaction, changed ones through the document update (a new revision
// of the same document).
func (a *Sync) write(ctx context.Context, spec SyncSpec, have map[string]models.SyncItem, out []SyncItemResult, ready []*converted) error {
	var fresh []db.NewSyncedDoc
	var at []int
	for i, r := range ready {
		if r == nil {
			continue
		}
		if _, ok := have[r.item.Key]; ok {
			if err := a.update(ctx, spec, have[r.item.Key], r, &out[i]); err != nil {
				return err
			}
			continue
		}
		fresh = append(fresh, db.NewSyncedDoc{Doc: r.doc, Item: r.item})
		at = append(at, i)
	}
	if len(fresh) == 0 {
		return nil
	}
	for _, nd := range fresh {
		nd.Doc.ParseMeta = strPtr(withProvenance(nd.Doc.ParseMeta, spec, nil, 1))
	}
	created, err := a.D.DB.CreateSyncedDocuments(ctx, fresh)
	if errors.Is(err, db.ErrCollectionNotInSite) || errors.Is(err, db.ErrNotFound) {
		for _, i := range at {
			out[i].Outcome, out[i].Reason = SyncFailed, out[i].Key+": the sync's collection is gone or belongs to another site"
		}
		return nil
	}
	if err != nil {
		return err
	}
	for k, i := range at {
		out[i].Outcome, out[i].DocumentID, out[i].Title = SyncAdded, fresh[k].Doc.ID, fresh[k].Doc.Title
		_ = created[k] // false: an earlier attempt created it; the outcome is the same
	}
	return nil
}

// update replaces a synced document's title and content with the source's
// (the edit rule: the source wins when it changed), records the item and
// the provenance. A document deleted in Lore is created again.
func (a *Sync) update(ctx context.Context, spec SyncSpec, it models.SyncItem, r *converted, out *SyncItemResult) error {
	// The revision this change stores is the data source's.
	ctx = db.WithRevision(ctx, db.RevisionMeta{Source: models.RevisionSync, Author: spec.Name})
	edited := false
	_, after, err := a.D.DB.UpdateDocument(ctx, it.DocumentID, func(doc *models.Document) error {
		edited = it.SyncedRevision > 0 && doc.ContentVersion > it.SyncedRevision
		doc.Title, doc.Content, doc.ReadingTime = r.doc.Title, r.doc.Content, r.doc.ReadingTime
		if spec.Vectorize {
			doc.VectorStatus = models.VecPending
		}
		return nil
	})
	if errors.Is(err, db.ErrNotFound) {
		// The item still names the deleted document: point it at a new one.
		r.doc.ID = 0
		if err := a.D.DB.CreateDocument(ctx, r.doc); err != nil {
			return err
		}
		r.item.DocumentID, r.item.SyncedRevision = r.doc.ID, r.doc.ContentVersion
		if err := a.D.DB.SaveSyncItem(ctx, r.item); err != nil {
			return err
		}
		out.Outcome, out.DocumentID, out.Title, out.Note = SyncUpdated, r.doc.ID, r.doc.Title, "the document had been deleted in Lore; created again"
		return nil
	}
	if err != nil {
		return err
	}
	r.item.DocumentID, r.item.SyncedRevision = after.ID, after.ContentVersion
	if err := a.D.DB.SetDocumentParseMeta(ctx, after.ID, withProvenance(r.doc.ParseMeta, spec, nil, after.ContentVersion)); err != nil {
		return err
	}
	if err := a.D.DB.SaveSyncItem(ctx, r.item); err != nil {
		return err
	}
	out.Outcome, out.DocumentID, out.Title = SyncUpdated, after.ID, after.Title
	if edited {
		out.Note = "replaced an edit made in Lore (the source changed)"
	}
	return nil
}

// readPages fetches a batch of pages one at a time, politely, each
// conditional on the validators of the last sync: 304 or the same body is
// unchanged (nothing converted), 404/410 is gone, any other failure fails
// the page alone.
func (a *Sync) readPages(ctx context.Context, ds *models.DataSource, in SyncApplyInput, have map[string]models.SyncItem,
	conv convert.Converter, out []SyncItemResult, ready []*converted) error {
	cfg, err := webConfig(ds)
	if err != nil {
		return err
	}
	maxBytes := min(a.D.Cfg.ImportMaxBytes, 20<<20)
	f := a.fetcher(cfg, maxBytes)
	delay := time.Duration(cfg.DelayMS) * time.Millisecond
	if in.Robots != nil && in.Robots.CrawlDelay > delay {
		delay = in.Robots.CrawlDelay
	}
	for i, c := range in.Changes {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(delay):
			}
		}
		it, known := have[c.Key]
		out[i] = SyncItemResult{Key: c.Key, DocumentID: it.DocumentID}
		if known && it.RunID == in.Spec.RunID && in.Spec.RunID != 0 {
			out[i].Outcome = SyncUnchanged // an earlier attempt of this run read it
			out[i].Links = decodeLinks(it.Links)
			continue
		}
		if !in.Robots.Allowed(c.Key) {
			out[i].Outcome, out[i].Reason = SyncFailed, c.Key+": robots.txt disallows it"
			continue
		}
		page, err := f.Get(ctx, c.Key, it.ETag, it.LastModified, cfg.Prefix)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			out[i].Outcome, out[i].Reason = SyncFailed, c.Key+": "+err.Error()
			continue
		case page.Gone && known:
			out[i].Outcome, out[i].Reason = SyncGone, fmt.Sprintf("HTTP %d", page.Status)
			continue
		case page.Gone:
			out[i].Outcome, out[i].Reason = SyncFailed, fmt.Sprintf("%s: HTTP %d", c.Key, page.Status)
			continue
		case page.NotModified && known:
			out[i].Outcome, out[i].Links = SyncUnchanged, decodeLinks(it.Links)
			continue
		case page.NotModified:
			out[i].Outcome, out[i].Reason = SyncFailed, c.Key+": HTTP 304 to a request without validators"
			continue
		}
		sum := sha256.Sum256(page.Body)
		version := hex.EncodeToString(sum[:])
		ext := websrc.Ext(page.ContentType, c.Key)
		var links []string
		if in.Crawl && ext == "html" {
			links = websrc.Links(page.Body, page.FinalURL, cfg.Prefix)
		}
		lb, _ := json.Marshal(links)
		item := &models.SyncItem{DataSourceID: ds.ID, Key: c.Key, SiteID: in.Spec.SiteID, Version: version,
			Ref: firstOf(page.ETag, page.LastModified), ETag: page.ETag, LastModified: page.LastModified, Links: string(lb), RunID: in.Spec.RunID}
		out[i].Links = links
		if known && it.Version == version {
			out[i].Outcome = SyncUnchanged
			item.DocumentID, item.SyncedRevision = it.DocumentID, it.SyncedRevision
			if err := a.D.DB.SaveSyncItem(ctx, item); err != nil {
				return err
			}
			continue
		}
		doc, err := a.convertItem(ctx, conv, in.Spec, c.Key, "page."+ext, page.Body,
			map[string]any{"url": c.Key, "etag": page.ETag, "last_modified": page.LastModified})
		if err != nil {
			out[i].Outcome, out[i].Reason = SyncFailed, failureReason(err)
			continue
		}
		ready[i] = &converted{i: i, doc: doc, item: item}
	}
	return nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func decodeLinks(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// SyncDeleteInput lists the items whose documents go.
type SyncDeleteInput struct {
	Spec SyncSpec
	Keys []string
}

// SyncDelete removes the documents of items that left the source: their
// vectors from every store, then the document and its item. An item already
// gone (a retried attempt) counts as deleted.
func (a *Sync) SyncDelete(ctx context.Context, in SyncDeleteInput) (SyncApplyResult, error) {
	stop := heartbeatEvery(ctx, 5*time.Second, nil)
	defer stop()
	have, err := a.D.DB.SyncItemsByKey(ctx, in.Spec.DataSourceID, in.Keys)
	if err != nil {
		return SyncApplyResult{}, err
	}
	out := make([]SyncItemResult, len(in.Keys))
	for i, k := range in.Keys {
		out[i] = SyncItemResult{Key: k, Outcome: SyncDeleted}
		it, ok := have[k]
		if !ok {
			continue
		}
		out[i].DocumentID = it.DocumentID
		err := a.D.EachVectorStore(ctx, func(s vector.Store) error { return s.DeleteDocument(ctx, it.DocumentID) })
		if err != nil {
			return SyncApplyResult{}, classify(err)
		}
		if err := a.D.DB.DeleteSyncedDocument(ctx, in.Spec.DataSourceID, k, it.DocumentID); err != nil {
			return SyncApplyResult{}, err
		}
	}
	return SyncApplyResult{Items: out}, nil
}

// SyncFinishInput is a run's outcome.
type SyncFinishInput struct {
	RunID   int64
	Status  string
	Ref     string
	Message string
	Counts  map[string]int
	Items   []SyncItemResult
}

// MaxRunItems bounds the per-item results a run keeps (the changed and
// failed ones; unchanged items are only counted).
const MaxRunItems = 2000

// SyncFinish records a run's outcome: the data source is free for the next.
func (a *Sync) SyncFinish(ctx context.Context, in SyncFinishInput) error {
	items := make([]SyncItemResult, 0, min(len(in.Items), MaxRunItems))
	for _, it := range in.Items {
		if it.Outcome != SyncUnchanged && len(items) < MaxRunItems {
			it.Links = nil
			items = append(items, it)
		}
	}
	b, _ := json.Marshal(items)
	run := &models.SyncRun{ID: in.RunID, Status: in.Status, Ref: in.Ref, Message: in.Message, Items: string(b),
		Added: in.Counts[SyncAdded], Updated: in.Counts[SyncUpdated] + in.Counts[SyncRenamed], Deleted: in.Counts[SyncDeleted],
		Unchanged: in.Counts[SyncUnchanged], Failed: in.Counts[SyncFailed]}
	return a.D.DB.FinishSyncRun(ctx, run)
}

// SyncSkip records a scheduled run that found another one running.
func (a *Sync) SyncSkip(ctx context.Context, runID int64, message string) error {
	return a.D.DB.FinishSyncRun(ctx, &models.SyncRun{ID: runID, Status: models.SyncSkipped, Message: message, Items: "[]"})
}
