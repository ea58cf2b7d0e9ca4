package vector

import "context"

// KeywordStats are a site's keyword corpus statistics, as the keyword index
// counts them: how many chunks, their mean weighted length in terms, and in
// how many chunks each asked term occurs. Scoring with them (instead of with
// the few candidates of one query) makes a reranker's idf agree with the
// index, and lets retrieval tell a question the site covers from one whose
// words it has never seen.
type KeywordStats struct {
	Docs    int
	AvgLen  float64
	DocFreq map[string]int // analyzed term → chunks containing it (absent: 0)
}

// StatsSource is implemented by stores that can report KeywordStats. It is
// optional: callers fall back to statistics of the candidates at hand.
type StatsSource interface {
	// KeywordStats returns the site's statistics for the given analyzed
	// terms (analyze.Terms); an unknown site has Docs 0.
	KeywordStats(ctx context.Context, siteID int64, terms []string) (KeywordStats, error)
}

// Field weights of the keyword index: a term in a chunk's document title or
// heading path counts this many times, since a heading says what the whole
// section is about. Stores and rerankers that score fields use these values
// so their rankings agree.
const (
	TitleWeight   = 2
	HeadingWeight = 3
)

// ChunkLister is implemented by stores that can list a document's stored
// chunks, for the admins' chunk view. It is optional.
type ChunkLister interface {
	// DocumentChunks returns every stored chunk of the document (all
	// versions), ordered by version, then index, without vectors.
	DocumentChunks(ctx context.Context, documentID int64) ([]Hit, error)
}
