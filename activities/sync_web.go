package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/datasource/websrc"
	"github.com/lorekb/lore/models"
)

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
	return &websrc.Fetcher{Client: &http.Client{Transport: a.Outbound(), CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}, MaxBytes: maxBytes, Timeout: time.Duration(cfg.TimeoutMS) * time.Millisecond, UserAgent: websrc.Agent + "/1.0 (+Lore sync)"}
}

// planWeb reads robots.txt and the sitemap (or takes the start page): the
// pages to check, and the pages known from the last runs.
func (a *Sync) planWeb(ctx context.Context, ds *models.DataSource, known func() ([]models.SyncItem, error), share float64) (SyncPlan, error) {
	cfg, err := webConfig(ds)
	if err != nil {
		return SyncPlan{}, err
	}
	items, err := known()
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
	maxBytes := min(a.Cfg.ImportMaxBytes, 20<<20)
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
			if err := a.DB.SaveSyncItem(ctx, item); err != nil {
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
