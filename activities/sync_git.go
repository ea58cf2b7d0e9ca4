package activities

import (
	"context"
	"encoding/json"
	"path"
	"path/filepath"
	"sort"
	"sync"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/datasource/gitsrc"
	"github.com/lorekb/lore/models"
	"golang.org/x/sync/errgroup"
)

// gitClient reaches repositories through the outbound guard, with the
// clones cached under the data directory.
func (a *Sync) gitClient() *gitsrc.Client {
	return &gitsrc.Client{Transport: a.Outbound(), MaxBytes: 1 << 30, CacheDir: filepath.Join(a.Cfg.DataDir, "sync", "git")}
}

// planRepo fetches the branch and compares its head's files with the
// items last synced.
func (a *Sync) planRepo(ctx context.Context, ds *models.DataSource, known func() ([]models.SyncItem, error), share float64, confirm bool,
	pre *prefetch) (SyncPlan, error) {
	var cfg gitsrc.Config
	if err := json.Unmarshal([]byte(ds.Config), &cfg); err != nil {
		return SyncPlan{}, syncFailure("config: %v", err)
	}
	gitConfigs.Store(ds.ID, cfg)
	repo, err := pre.repo(ds.ID, cfg)
	if repo == nil && err == nil {
		repo, err = a.gitClient().Open(ctx, ds.ID, cfg, true, "")
	}
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
	items, err := known()
	if err != nil {
		return SyncPlan{}, err
	}
	plan := PlanGit(files, items)
	plan.Ref, plan.DeleteShare = head, share
	plan.guard(confirm)
	return plan, nil
}

// prefetch is a fetch begun with a run, before the run took its data source.
type prefetch struct {
	done chan struct{}
	id   int64
	cfg  gitsrc.Config
	r    *gitsrc.Repo // nil, nil: nothing was fetched (not a clone of a git data source)
	err  error
}

// prefetch begins fetching a git data source's branch when it has a clone
// (a first sync clones in its plan activity, heartbeating). The fetch, the
// slowest step of a re-sync, starts at once with the config this process
// last read of the data source (its clone is then open too), else once the
// data source is read; the plan uses it only when the config it reads is the
// same (prefetch.repo).
func (a *Sync) prefetch(ctx context.Context, dataSourceID int64) *prefetch {
	f := &prefetch{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		cl := a.gitClient()
		if last, ok := gitConfigs.Load(dataSourceID); ok && cl.Cloned(dataSourceID, last.(gitsrc.Config)) {
			f.id, f.cfg = dataSourceID, last.(gitsrc.Config)
			f.r, f.err = cl.Open(ctx, f.id, f.cfg, true, "")
			return
		}
		ds, err := a.DB.GetDataSource(ctx, dataSourceID)
		if err != nil || ds.Type != models.DataSourceGit {
			return
		}
		if json.Unmarshal([]byte(ds.Config), &f.cfg) != nil || !cl.Cloned(ds.ID, f.cfg) {
			return
		}
		f.id = ds.ID
		f.r, f.err = cl.Open(ctx, ds.ID, f.cfg, true, "")
	}()
	return f
}

// gitConfigs are the configs of the git data sources this process last
// planned, by id: what a prefetch fetches with before the data source is
// read again.
var gitConfigs sync.Map

// wait waits for the fetch to end (nil: none began).
func (f *prefetch) wait() {
	if f != nil {
		<-f.done
	}
}

// repo is the fetch's clone when it is of this data source and config
// (nil, nil: fetch now).
func (f *prefetch) repo(id int64, cfg gitsrc.Config) (*gitsrc.Repo, error) {
	if f == nil {
		return nil, nil
	}
	f.wait()
	if f.id != id || f.cfg.URL != cfg.URL || f.cfg.Branch != cfg.Branch || f.cfg.Token != cfg.Token {
		return nil, nil
	}
	return f.r, f.err
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
			adds = append(adds, SyncChange{Key: f.Path, Op: SyncAdd, Version: f.Blob})
		case it.Version != f.Blob:
			plan.Changes = append(plan.Changes, SyncChange{Key: f.Path, Op: SyncUpdate, Version: f.Blob, DocumentID: it.DocumentID})
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
	maxBytes := a.Cfg.ImportMaxBytes
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
	if err := a.DB.RenameSyncItem(ctx, spec.DataSourceID, c.From, &it); err != nil {
		return err
	}
	if doc, err := a.DB.GetDocument(ctx, old.DocumentID); err == nil {
		_ = a.DB.SetDocumentParseMeta(ctx, doc.ID, withProvenance(doc.ParseMeta, spec, map[string]any{"path": c.Key, "commit": spec.Ref,
			"renamed_from": c.From}, it.SyncedRevision))
		out.Title = doc.Title
	}
	out.Outcome, out.DocumentID = SyncRenamed, old.DocumentID
	return nil
}
