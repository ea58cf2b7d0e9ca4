package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/chunk"
	"github.com/lorekb/lore/internal/llm/extractive"
	"github.com/lorekb/lore/internal/retrieve"
	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/temporal"
)

// SearchInput is one search tool call.
type SearchInput struct {
	ThreadID   string
	ToolCallID string
	TenantID   int64
	SiteID     int64
	// SiteIDs, when set, are the sites searched instead of SiteID (a turn of
	// no site); each retrieval is scoped to one of them.
	SiteIDs   []int64
	Arguments string // the tool call's JSON arguments
	// DeadlineMs is when the stream times out (Unix ms): a search still
	// running then stops with ErrStreamTimeout (no timer of the run can
	// interrupt a local activity).
	DeadlineMs int64
}

// SourceRef is one cited document of a search result.
type SourceRef struct {
	DocumentID int64  `json:"document_id"`
	SiteID     int64  `json:"site_id"`
	Title      string `json:"title"`
	// Score is the passage's support for the search query in [0,1]
	// (extractive.Support): the share of the query's term weight its best
	// sentences state. Unlike the search's relevance (the section's share
	// of the query's words, 1 for every page that mentions them all), it
	// tells apart a passage that answers from one that mentions.
	Score float64 `json:"score"`
	// Revision is the document revision (content version) the passage
	// quotes: retrieval serves chunks of the current version only.
	Revision int64 `json:"revision,omitempty"`
	// Section is the heading of the passage's best fragment.
	Section string `json:"section,omitempty"`
}

// SearchResult is what the workflow needs of a search: no passage text.
type SearchResult struct {
	ToolCallID string
	ChunkCount int
	Hash       string // content hash of the passages, for the identical-output guard
	// ContentHash is the hash of the stored result (all of it): the run
	// passes it on with the tool message (TurnMessage.ToolHash).
	ContentHash string `json:",omitempty"`
	Sources     []SourceRef
	ElapsedMS   int64
}

// storedResult is the JSON kept in tool_results (served by the tool-result
// endpoint) and formatted for the model.
type storedResult struct {
	Query    string    `json:"query"`
	Passages []Passage `json:"passages"`
}

// Passage is one document's part of a stored search result (the
// tool-result endpoint renders it in the reference's shape).
type Passage struct {
	DocumentID int64   `json:"document_id"`
	SiteID     int64   `json:"site_id"`
	Title      string  `json:"title"`
	Score      float64 `json:"score"`
	Fragments  int     `json:"fragments"`
	Content    string  `json:"content"`
	// Revision is the document revision the fragments are of.
	Revision int64 `json:"revision,omitempty"`
	// Section is the heading of the fragment the search ranked first (the
	// last part of its heading path), where a citation of it opens.
	Section string `json:"section,omitempty"`
}

// FragmentSeparator joins fragments of one document in a passage.
const FragmentSeparator = "\n[...]\n"

// Search recalls fragments of the request's site only (hard isolation; a
// turn of no site searches each of its sites on its own), keeps
// published, completed documents, reranks unless disabled, merges fragments
// per document and stores the result under the tool call id.
func (a *Chat) Search(ctx context.Context, in SearchInput) (SearchResult, error) {
	if in.DeadlineMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, time.UnixMilli(in.DeadlineMs), errStreamDeadline)
		defer cancel()
	}
	res, err := a.search(ctx, in)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(context.Cause(ctx), errStreamDeadline):
		return res, temporal.NewNonRetryableApplicationError("the stream deadline passed during the search", ErrStreamTimeout, nil)
	}
	return res, a.upstreamFailure(ctx, "search", searchFailedNotice, err)
}

func (a *Chat) search(ctx context.Context, in SearchInput) (SearchResult, error) {
	start := time.Now()
	var args struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal([]byte(in.Arguments), &args)
	query := strings.TrimSpace(args.Query)
	sites := in.SiteIDs
	if len(sites) == 0 {
		sites = []int64{in.SiteID}
	}
	results, err := a.retrieve(ctx, in.TenantID, sites, query, retrieve.AllStages(), a.Cfg.RAGRerankTopK, nil)
	if err != nil {
		return SearchResult{}, err
	}
	res := storedResult{Query: query, Passages: SearchPassages(results)}
	content, _ := json.Marshal(res)
	if err := a.DB.SaveToolResult(ctx, &models.ToolResult{ToolCallID: in.ToolCallID, ThreadID: in.ThreadID, Content: string(content)}); err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{ToolCallID: in.ToolCallID, ChunkCount: len(results), ContentHash: contentHash(string(content))}
	a.results.put(in.ThreadID, in.ToolCallID, string(content), out.ContentHash, res, time.Now())
	h := sha256.New()
	titles, contents := make([]string, len(res.Passages)), make([]string, len(res.Passages))
	for i, p := range res.Passages {
		titles[i], contents[i] = p.Title, p.Content
	}
	support := extractive.Support(query, titles, contents)
	for i, p := range res.Passages {
		h.Write([]byte(fmt.Sprintf("%d\x00%s\x00", p.DocumentID, p.Content)))
		out.Sources = append(out.Sources, SourceRef{DocumentID: p.DocumentID, SiteID: p.SiteID, Title: p.Title, Score: support[i], Revision: p.Revision, Section: p.Section})
	}
	out.Hash = hex.EncodeToString(h.Sum(nil))
	out.ElapsedMS = time.Since(start).Milliseconds()
	return out, nil
}

// visible keeps hits of published, completed documents of the site.
func (a *Chat) visible(ctx context.Context, siteID int64, hits []vector.Hit) ([]vector.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	ids := make([]int64, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.DocumentID)
	}
	slices.Sort(ids) // each document once, however many of its chunks hit
	ok, err := a.DB.SearchableDocuments(ctx, siteID, slices.Compact(ids))
	if err != nil {
		return nil, err
	}
	out := hits[:0]
	for _, h := range hits {
		if v, found := ok[h.DocumentID]; found && h.SiteID == siteID && v == h.Version {
			out = append(out, h)
		}
	}
	return out, nil
}

// SearchPassages turns the pipeline's ranked chunks into the search tool's
// passages: one per document, scored by the best relevance of its chunks.
// It is exported so the quality benchmark (loreeval -offline) answers over
// exactly what the chat's search stores.
func SearchPassages(results []retrieve.Result) []Passage {
	hits := make([]vector.Hit, len(results))
	for i, r := range results {
		hits[i] = r.Hit
		hits[i].Score = float32(r.Relevance)
	}
	return mergeByDocument(hits)
}

// mergeByDocument groups fragments of one document into one passage (in
// chunk order, separated by FragmentSeparator), ordered by best score.
func mergeByDocument(hits []vector.Hit) []Passage {
	var order []int64
	groups := map[int64][]vector.Hit{}
	for _, h := range hits {
		if _, ok := groups[h.DocumentID]; !ok {
			order = append(order, h.DocumentID)
		}
		groups[h.DocumentID] = append(groups[h.DocumentID], h)
	}
	out := make([]Passage, 0, len(order))
	for _, id := range order {
		g := groups[id]
		section := leafHeading(g[0].Heading) // hits come in the search's order
		best := g[0].Score                   // the passage is as relevant as its best fragment
		for _, h := range g[1:] {
			best = max(best, h.Score)
		}
		sort.SliceStable(g, func(i, j int) bool { return g[i].ChunkIndex < g[j].ChunkIndex })
		texts := make([]string, len(g))
		for i, h := range g {
			texts[i] = strings.TrimSpace(h.Text)
			if h.Heading != "" {
				// The heading path says what the fragment is about, and an
				// answer may sit in it.
				texts[i] = "# " + h.Heading + "\n" + texts[i]
			}
		}
		out = append(out, Passage{DocumentID: id, SiteID: g[0].SiteID, Title: g[0].Title, Score: float64(best),
			Fragments: len(g), Content: strings.Join(texts, FragmentSeparator), Revision: g[0].Version, Section: section})
	}
	return out
}

// leafHeading is the last heading of a heading path ("A > B > C" gives C).
func leafHeading(path string) string {
	_, leaf := chunk.SplitHeading(path)
	return strings.TrimSpace(leaf)
}

// FormatToolResult renders a stored search result for the model, numbering
// passages from start.
func FormatToolResult(stored string, start int) string {
	var r storedResult
	if json.Unmarshal([]byte(stored), &r) != nil {
		r = storedResult{}
	}
	return formatResult(r, start)
}

// formatResult is FormatToolResult of a decoded result. A result kept in
// memory (toolResults) was never through JSON, which replaces invalid UTF-8
// with U+FFFD: the text is made valid here too (a run of invalid bytes
// becomes one U+FFFD), so PostgreSQL accepts it in Persist.
func formatResult(r storedResult, start int) string {
	if len(r.Passages) == 0 {
		return "No relevant documents found."
	}
	var b strings.Builder
	for i, p := range r.Passages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s (relevance %.2f)\n%s", start+i, p.Title, p.Score, p.Content)
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}
