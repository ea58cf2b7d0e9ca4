package activities

import (
	"context"
	"testing"

	"github.com/lorekb/lore/internal/vector"
)

// Site and document deletes reach every dimension's store, not only the
// one of the tenant's current embedding model: chunks written before a
// model change stay in the old dimension's store otherwise.
func TestDeletesReachEveryDimension(t *testing.T) {
	f := newSearchFixture(t) // indexed with the default local embedder
	ctx := context.Background()
	d := f.d
	current, err := d.Vectors(ctx, defaultEmbedDimension(t))
	if err != nil {
		t.Fatal(err)
	}
	old, err := d.Vectors(ctx, 8) // an earlier embedding model's store
	if err != nil {
		t.Fatal(err)
	}
	vec := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	chunk := func(site, doc int64) vector.Chunk {
		return vector.Chunk{ID: vector.ChunkID(doc, 1, 0), SiteID: site, DocumentID: doc, Version: 1, Text: "quokka", Vector: vec}
	}
	if err := old.Upsert(ctx, []vector.Chunk{chunk(f.siteA, f.guide), chunk(f.siteA, f.notes), chunk(f.siteB, f.other)}); err != nil {
		t.Fatal(err)
	}
	count := func(s vector.Store, doc int64) int {
		t.Helper()
		n, err := s.CountDocument(ctx, doc)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count(current, f.notes) == 0 || count(old, f.notes) != 1 {
		t.Fatal("fixture: notes not in both stores")
	}

	if err := NewVectorize(d).RemoveVectors(ctx, DocRef{DocumentID: f.notes}); err != nil {
		t.Fatal(err)
	}
	if count(current, f.notes) != 0 || count(old, f.notes) != 0 {
		t.Errorf("document delete left chunks: current %d, old %d", count(current, f.notes), count(old, f.notes))
	}
	if count(old, f.guide) != 1 {
		t.Error("document delete removed another document")
	}

	if err := NewSites(d).DeleteSiteVectors(ctx, f.siteA, 0); err != nil {
		t.Fatal(err)
	}
	for _, s := range []vector.Store{current, old} {
		hits, err := s.KeywordSearch(ctx, f.siteA, "quokka", 100)
		if err != nil || len(hits) != 0 {
			t.Errorf("site delete left %d chunks (%v)", len(hits), err)
		}
	}
	if count(current, f.other) == 0 || count(old, f.other) != 1 {
		t.Error("site delete removed another site's chunks")
	}
}
