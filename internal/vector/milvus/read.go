package milvus

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/milvus-io/milvus/client/v2/column"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/index"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/vector"
)

// maxTopK is Milvus's limit on results per search.
const maxTopK = 16384

// outputFields are returned with every hit. search_text is never read
// back: it exists only to feed the BM25 function.
var outputFields = []string{fieldSite, fieldDocument, fieldVersion, fieldChunkIndex, fieldTitle, fieldHeading, fieldText}

// consistency is Strong unless the caller allowed stale reads (see
// vector.AllowStale): Bounded then skips waiting for the newest writes.
func consistency(ctx context.Context) entity.ConsistencyLevel {
	if vector.StaleAllowed(ctx) {
		return entity.ClBounded
	}
	return entity.ClStrong
}

// Search returns the k chunks of the site nearest to vec by cosine, best
// first, with scores of at least threshold.
func (s *Store) Search(ctx context.Context, siteID int64, vec []float32, k int, threshold float32) ([]vector.Hit, error) {
	if len(vec) != s.dim {
		return nil, fmt.Errorf("%w: query has %d dimensions, store has %d", vector.ErrDimension, len(vec), s.dim)
	}
	if k <= 0 {
		return nil, ctx.Err()
	}
	hits, err := s.search(ctx, s.denseOption(ctx, siteID, vec, k))
	if err != nil {
		return nil, err
	}
	// Results come best first, so the threshold cuts a suffix.
	for i, h := range hits {
		if h.Score < threshold {
			return hits[:i], nil
		}
	}
	return hits, nil
}

func (s *Store) denseOption(ctx context.Context, siteID int64, vec []float32, k int) milvusclient.SearchOption {
	k = min(k, maxTopK)
	return milvusclient.NewSearchOption(s.collection, k, []entity.Vector{entity.FloatVector(vec)}).
		WithANNSField(fieldVector).
		WithFilter(siteFilter(siteID)).
		WithOutputFields(outputFields...).
		WithConsistencyLevel(consistency(ctx)).
		WithAnnParam(index.NewHNSWAnnParam(max(k, 64)))
}

// KeywordSearch returns the k chunks of the site with the best BM25 score
// for query, best first. A query without a single term (only punctuation
// or emoji, or only stop words) matches nothing and is not sent: Milvus
// answers a full-text search whose text has no tokens with an error
// (milvus-io/milvus#37022), which must not fail the chat search whose dense
// half found passages.
func (s *Store) KeywordSearch(ctx context.Context, siteID int64, query string, k int) ([]vector.Hit, error) {
	opt := s.keywordOption(ctx, siteID, query, k)
	if opt == nil {
		return nil, ctx.Err()
	}
	hits, err := s.search(ctx, opt)
	if err != nil {
		return nil, err
	}
	// Only chunks that share a term with the query are matches.
	out := hits[:0]
	for _, h := range hits {
		if h.Score > 0 {
			out = append(out, h)
		}
	}
	return out, nil
}

// keywordOption builds the full-text search of query, or returns nil when
// there is nothing to search for.
func (s *Store) keywordOption(ctx context.Context, siteID int64, query string, k int) milvusclient.SearchOption {
	q := keywordQuery(query)
	if k <= 0 || q == "" {
		return nil
	}
	return milvusclient.NewSearchOption(s.collection, min(k, maxTopK), []entity.Vector{entity.Text(q)}).
		WithANNSField(fieldSparse).
		WithFilter(siteFilter(siteID)).
		WithOutputFields(outputFields...).
		WithConsistencyLevel(consistency(ctx))
}

// keywordQuery is the text sent for a keyword search: the query's terms
// under the analyzer that filled search_text, space-separated, or "" when
// it has none (punctuation, emoji, only stop words).
func keywordQuery(query string) string {
	return strings.Join(analyze.Terms(query), " ")
}

// search runs one single-query search and converts its results.
func (s *Store) search(ctx context.Context, opt milvusclient.SearchOption) ([]vector.Hit, error) {
	var res []milvusclient.ResultSet
	err := s.call(ctx, "search", func(cli *milvusclient.Client) error {
		var err error
		res, err = cli.Search(ctx, opt)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, nil
	}
	rs := res[0]
	if rs.Err != nil {
		return nil, fmt.Errorf("milvus: search: %w", classify(rs.Err))
	}
	return hitsFrom(rs)
}

// hitsFrom converts a result set into hits.
func hitsFrom(rs milvusclient.ResultSet) ([]vector.Hit, error) {
	n := rs.ResultCount
	if n == 0 || rs.IDs == nil {
		return nil, nil
	}
	cols := map[string]column.Column{}
	for _, name := range outputFields {
		c := rs.GetColumn(name)
		if c == nil {
			return nil, fmt.Errorf("milvus: search result lacks field %s", name)
		}
		cols[name] = c
	}
	hits := make([]vector.Hit, n)
	for i := 0; i < n; i++ {
		var h vector.Hit
		var errs []error
		str := func(c column.Column) string {
			v, err := c.GetAsString(i)
			errs = append(errs, err)
			return v
		}
		num := func(c column.Column) int64 {
			v, err := c.GetAsInt64(i)
			errs = append(errs, err)
			return v
		}
		h.ChunkID = str(rs.IDs)
		h.SiteID = num(cols[fieldSite])
		h.DocumentID = num(cols[fieldDocument])
		h.Version = num(cols[fieldVersion])
		h.ChunkIndex = int(num(cols[fieldChunkIndex]))
		h.Title = str(cols[fieldTitle])
		h.Heading = str(cols[fieldHeading])
		h.Text = str(cols[fieldText])
		if i < len(rs.Scores) {
			h.Score = rs.Scores[i]
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("milvus: read search result %d: %w", i, err)
		}
		hits[i] = h
	}
	return hits, nil
}

// CountDocument returns the number of chunks of the document.
func (s *Store) CountDocument(ctx context.Context, documentID int64) (int, error) {
	return s.count(ctx, documentFilter(documentID))
}

// Count returns the number of chunks in the collection.
func (s *Store) Count(ctx context.Context) (int, error) {
	return s.count(ctx, "")
}

func (s *Store) count(ctx context.Context, expr string) (int, error) {
	opt := milvusclient.NewQueryOption(s.collection).
		WithOutputFields("count(*)").
		WithConsistencyLevel(consistency(ctx))
	if expr != "" {
		opt = opt.WithFilter(expr)
	}
	var rs milvusclient.ResultSet
	err := s.call(ctx, fmt.Sprintf("count %q", expr), func(cli *milvusclient.Client) error {
		var err error
		rs, err = cli.Query(ctx, opt)
		return err
	})
	if err != nil {
		return 0, err
	}
	c := rs.GetColumn("count(*)")
	if c == nil || c.Len() == 0 {
		return 0, fmt.Errorf("milvus: count %q: no count in the answer", expr)
	}
	n, err := c.GetAsInt64(0)
	if err != nil {
		return 0, fmt.Errorf("milvus: count %q: %w", expr, err)
	}
	return int(n), nil
}
