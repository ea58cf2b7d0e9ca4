package workflows

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// Job kinds: the LoreKind search attribute of every workflow Lore starts, the
// kind a job view shows and the kind filter of GET /jobs.
const (
	KindVectorizeDocument = "vectorize_document"
	KindBatchVectorize    = "batch_vectorize"
	KindRemoveVectors     = "remove_vectors"
	KindDeleteSite        = "delete_site"
	KindReindex           = "reindex"
	KindImport            = "import"
	KindChat              = "chat"
	// KindKefuSync is the WeCom customer-service pull of one account.
	KindKefuSync = "kefu_sync"
)

// JobKinds are the kinds GET /jobs lists (chat runs and kefu syncs are
// workflows, not jobs).
var JobKinds = []string{KindVectorizeDocument, KindBatchVectorize, KindRemoveVectors, KindDeleteSite, KindReindex, KindImport, KindSync}

// Custom search attributes: an operator filters the Temporal Web UI by them
// (LoreSiteId = 3) and GET /jobs lists through them. They must be registered
// on the namespace first: temporal-dev.sh does it for the dev server, `lore
// temporal setup` for a cluster. Three Int attributes is the most a
// SQL-backed visibility store allows, so the requester is a Keyword (email).
var (
	AttrTenant      = temporal.NewSearchAttributeKeyInt64("LoreTenantId")
	AttrSite        = temporal.NewSearchAttributeKeyInt64("LoreSiteId")
	AttrDocument    = temporal.NewSearchAttributeKeyInt64("LoreDocumentId")
	AttrKind        = temporal.NewSearchAttributeKeyKeyword("LoreKind")
	AttrRequestedBy = temporal.NewSearchAttributeKeyKeyword("LoreRequestedBy")
	// AttrJob is true on the workflows GET /jobs lists (JobKinds) and false
	// on the others Lore starts with a kind (chat turns, kefu syncs), which
	// outnumber jobs many times over on a busy site: the Web UI's "jobs
	// only" saved query is LoreJob = true, whatever kinds come later.
	AttrJob = temporal.NewSearchAttributeKeyBool("LoreJob")
)

// IsJobKind reports whether GET /jobs lists workflows of kind.
func IsJobKind(kind string) bool { return slices.Contains(JobKinds, kind) }

// SearchAttributeTypes names every custom search attribute with its type, for
// registration (`lore temporal setup`, the dev server's --search-attribute).
var SearchAttributeTypes = map[string]enumspb.IndexedValueType{
	AttrTenant.GetName():      enumspb.INDEXED_VALUE_TYPE_INT,
	AttrSite.GetName():        enumspb.INDEXED_VALUE_TYPE_INT,
	AttrDocument.GetName():    enumspb.INDEXED_VALUE_TYPE_INT,
	AttrKind.GetName():        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	AttrRequestedBy.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	AttrJob.GetName():         enumspb.INDEXED_VALUE_TYPE_BOOL,
}

// DevServerArgs are the flags every Temporal dev server Lore starts gets
// (temporal-dev.sh passes the same; TestTemporalDevScriptMatches checks it):
//   - eager activity execution lets a workflow task hand its new activity
//     straight to the worker that completed it, skipping a trip through the
//     task queue (the chat run's model turns in scheduled mode);
//   - the search attribute cache is read from memory, not refreshed from the
//     database on every read: `temporal server start-dev` turns the refresh
//     on so that attributes created at run time show at once, and then reads
//     the cluster metadata row from SQLite for every start, every command
//     validation and every visibility write (7% of the dev server's CPU at 100
//     concurrent chats, bench/REPORT.md). The attributes registered here are
//     in the cache from the start; one created later with `temporal operator
//     search-attribute create` shows within a minute;
//   - Lore's custom search attributes (DevServerSearchAttributeArgs), so jobs
//     start with them and GET /jobs can list them.
func DevServerArgs() []string {
	return append([]string{
		"--dynamic-config-value", "system.enableActivityEagerExecution=true",
		"--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=false",
	}, DevServerSearchAttributeArgs()...)
}

// DevServerSearchAttributeArgs are the dev server flags that register
// SearchAttributeTypes (`--search-attribute LoreSiteId=Int`, …).
func DevServerSearchAttributeArgs() []string {
	var out []string
	for _, name := range sortedAttrNames() {
		t := "Int"
		switch SearchAttributeTypes[name] {
		case enumspb.INDEXED_VALUE_TYPE_KEYWORD:
			t = "Keyword"
		case enumspb.INDEXED_VALUE_TYPE_BOOL:
			t = "Bool"
		}
		out = append(out, "--search-attribute", name+"="+t)
	}
	return out
}

func sortedAttrNames() []string {
	names := make([]string, 0, len(SearchAttributeTypes))
	for n := range SearchAttributeTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Memo keys of a job's workflow: the Web UI shows the memo beside the
// workflow, so an operator reads what a job is without decoding its input.
const (
	MemoTitle     = "title"
	MemoRequestID = "request_id"
)

// JobMeta says what a workflow is about: its search attributes and memo.
// Zero ids are left out (a tenant-wide re-index has no site).
type JobMeta struct {
	Kind        string
	TenantID    int64
	SiteID      int64
	DocumentID  int64
	RequestedBy string // the requester's email; empty for system jobs
	Title       string // human title: Vectorize 'Install guide' (site Handbook)
	RequestID   string // the HTTP request that started the job
}

// SearchAttributes are the typed search attributes of the job's workflow.
func (m JobMeta) SearchAttributes() temporal.SearchAttributes { return m.searchAttributes(true) }

// searchAttributes are the search attributes, LoreJob only when withJob (a
// namespace set up before it existed lacks it).
func (m JobMeta) searchAttributes(withJob bool) temporal.SearchAttributes {
	var upd []temporal.SearchAttributeUpdate
	if m.Kind != "" {
		upd = append(upd, AttrKind.ValueSet(m.Kind))
		if withJob {
			upd = append(upd, AttrJob.ValueSet(IsJobKind(m.Kind)))
		}
	}
	if m.TenantID != 0 {
		upd = append(upd, AttrTenant.ValueSet(m.TenantID))
	}
	if m.SiteID != 0 {
		upd = append(upd, AttrSite.ValueSet(m.SiteID))
	}
	if m.DocumentID != 0 {
		upd = append(upd, AttrDocument.ValueSet(m.DocumentID))
	}
	if m.RequestedBy != "" {
		// Keyword values are bounded by the engine (2 KB by default).
		upd = append(upd, AttrRequestedBy.ValueSet(clip(m.RequestedBy, 200)))
	}
	return temporal.NewSearchAttributes(upd...)
}

// Memo is the job's memo: its title and the request that started it.
func (m JobMeta) Memo() map[string]any {
	memo := map[string]any{MemoTitle: m.Title}
	if m.RequestID != "" {
		memo[MemoRequestID] = m.RequestID
	}
	return memo
}

// JobTitle builds the human title of a job: a verb, what it acts on and the
// site, e.g. Vectorize 'Install guide' (site Handbook).
func JobTitle(verb, subject, site string) string {
	var b strings.Builder
	b.WriteString(verb)
	if subject != "" {
		fmt.Fprintf(&b, " '%s'", clip(subject, 80))
	}
	if site != "" {
		fmt.Fprintf(&b, " (site %s)", clip(site, 60))
	}
	return b.String()
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
