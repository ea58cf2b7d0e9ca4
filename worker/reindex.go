package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// FormatReindexID is the workflow id of the re-index that brings a site to
// an index format: one per site and format, so every worker that starts
// with the new format asks for the same job, and a job that completed is
// not asked for again (reuse policy: only a failed, cancelled or timed-out
// one starts again).
func FormatReindexID(siteID int64, format string) string {
	sum := sha256.Sum256([]byte(format))
	return workflows.ReindexSiteID(siteID, "f"+hex.EncodeToString(sum[:4]))
}

// ReindexOutdatedSites starts a re-index job for every site whose index is
// not all of this process's format (deps.IndexFormat: the analyzer version,
// the indexed fields and the chunking), and returns their job ids. A worker
// calls it when it starts: after a change of tokenization or chunking, each
// site's documents are re-vectorized in the new format by the ordinary
// re-index job (paged, continued as new), visible in GET /jobs and the
// site's vector stats.
//
// Consistency while it runs: each document switches from its old chunks to
// its new ones at once (the new ones are written, then the old removed;
// see activities.Vectorize), so retrieval serves every document either
// whole in the old format or whole in the new one, never a mix within a
// document; across the site, documents not yet reached keep serving their
// old chunks until the job reaches them. Chunk rows record the format of
// each chunk (GET /documents/{id}/chunks shows it).
func ReindexOutdatedSites(ctx context.Context, d *deps.Deps) ([]string, error) {
	if d.Temporal == nil {
		return nil, nil
	}
	format := d.IndexFormat()
	sites, err := d.DB.SitesWithOldIndex(ctx, format)
	if err != nil {
		return nil, err
	}
	var ids []string
	starter := workflows.NewStarter(d.Log)
	for _, st := range sites {
		id, err := startFormatReindex(ctx, d, starter, st, format)
		if err != nil {
			return ids, fmt.Errorf("re-index site %d to index format %s: %w", st.ID, format, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func startFormatReindex(ctx context.Context, d *deps.Deps, starter *workflows.Starter, st db.SiteRef, format string) (string, error) {
	id := FormatReindexID(st.ID, format)
	meta := workflows.JobMeta{Kind: workflows.KindReindex, TenantID: st.TenantID, SiteID: st.ID, RequestedBy: "system",
		Title: workflows.JobTitle("Re-index site", st.Name, "") + " (index format " + format + ")"}
	in := workflows.ReindexInput{TenantID: st.TenantID, SiteID: st.ID,
		GroupSize: d.Cfg.BatchVectorizeGroup, Concurrency: d.Cfg.BatchVectorizeConcurrency}
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: d.Cfg.TemporalQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}
	// A running or completed job of this id comes back as its run: the
	// request is idempotent.
	run, err := workflows.StartWithMeta(starter, meta, opts, func(opts client.StartWorkflowOptions) (client.WorkflowRun, error) {
		return d.Temporal.ExecuteWorkflow(ctx, opts, workflows.Reindex, in)
	})
	if err != nil {
		return "", err
	}
	if j, err := d.DB.GetJob(ctx, id); err == nil && j.RunID == run.GetRunID() {
		return id, nil
	} else if err != nil && !errors.Is(err, db.ErrNotFound) {
		return "", err
	}
	subject, _ := json.Marshal(in)
	err = d.DB.SaveJob(ctx, &models.Job{ID: id, Kind: workflows.KindReindex, WorkflowID: id, RunID: run.GetRunID(),
		Subject: string(subject), TenantID: st.TenantID, SiteID: st.ID, Title: meta.Title})
	return id, err
}
