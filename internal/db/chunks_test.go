package db_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// TestChunkRowsFollowTheirDocuments: chunk rows are replaced per document,
// read by key, found by format, and go with their document and site.
func TestChunkRowsFollowTheirDocuments(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		var siteIDs []int64
		for _, name := range []string{"Chunks A", "Chunks B", "Chunks C"} {
			s := &models.Site{TenantID: 1, Name: name, Slug: name[len(name)-1:] + "-chunks", CreatedAt: now, UpdatedAt: now}
			if err := d.CreateSite(ctx, s); err != nil {
				t.Fatal(err)
			}
			siteIDs = append(siteIDs, s.ID)
		}
		docs := []models.Document{
			{TenantID: 1, SiteID: siteIDs[0], Title: "a1", Content: "x", Status: models.DocPublished, VectorStatus: models.VecCompleted, ChunkCount: 2},
			{TenantID: 1, SiteID: siteIDs[0], Title: "a2", Content: "x", Status: models.DocPublished, VectorStatus: models.VecCompleted, ChunkCount: 1},
			{TenantID: 1, SiteID: siteIDs[1], Title: "b1", Content: "x", Status: models.DocPublished, VectorStatus: models.VecCompleted, ChunkCount: 1},
			// Vectorized before chunk rows were kept: no rows at all.
			{TenantID: 1, SiteID: siteIDs[2], Title: "c1", Content: "x", Status: models.DocPublished, VectorStatus: models.VecCompleted, ChunkCount: 3},
		}
		for i := range docs {
			docs[i].ContentVersion, docs[i].Tags, docs[i].CreatedAt, docs[i].UpdatedAt = 1, "[]", now, now
		}
		if _, err := d.NewInsert().Model(&docs).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		row := func(doc models.Document, version int64, idx int, text, format string) models.Chunk {
			return models.Chunk{DocumentID: doc.ID, Version: version, Index: idx, SiteID: doc.SiteID, Text: text, Start: 0, End: len(text), IndexFormat: format}
		}
		// Version 1 of a1 in three chunks, then version 2 in two: the old
		// rows go.
		if err := d.ReplaceChunks(ctx, []int64{docs[0].ID}, []models.Chunk{row(docs[0], 1, 0, "old 0", "old"),
			row(docs[0], 1, 1, "old 1", "old"), row(docs[0], 1, 2, "old 2", "old")}); err != nil {
			t.Fatal(err)
		}
		if err := d.ReplaceChunks(ctx, []int64{docs[0].ID, docs[1].ID, docs[2].ID}, []models.Chunk{row(docs[0], 2, 0, "new 0", "new"),
			row(docs[0], 2, 1, "new 1", "new"), row(docs[1], 1, 0, "a2 0", "new"), row(docs[2], 1, 0, "b1 0", "old")}); err != nil {
			t.Fatal(err)
		}
		rows, err := d.DocumentChunks(ctx, docs[0].ID)
		if err != nil || len(rows) != 2 || rows[0].Text != "new 0" || rows[1].Text != "new 1" || rows[1].Version != 2 {
			t.Fatalf("rows of a1: %+v %v", rows, err)
		}
		byKey, err := d.ChunksByKey(ctx, []db.ChunkKey{{DocumentID: docs[0].ID, Version: 2, Index: 1},
			{DocumentID: docs[0].ID, Version: 1, Index: 2}, {DocumentID: docs[2].ID, Version: 1, Index: 0}})
		if err != nil || len(byKey) != 2 || byKey[db.ChunkKey{DocumentID: docs[0].ID, Version: 2, Index: 1}].Text != "new 1" ||
			byKey[db.ChunkKey{DocumentID: docs[2].ID, Version: 1, Index: 0}].Text != "b1 0" {
			t.Fatalf("by key: %+v %v", byKey, err)
		}
		// Site B holds a chunk of another format, site C a vectorized
		// document without rows; site A is all "new".
		old, err := d.SitesWithOldIndex(ctx, "new")
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, s := range old {
			got = append(got, s.ID)
		}
		if !reflect.DeepEqual(got, []int64{siteIDs[1], siteIDs[2]}) || old[0].Name != "Chunks B" || old[0].TenantID != 1 {
			t.Fatalf("sites with an old index: %+v, want ids %v", old, siteIDs[1:])
		}
		// Rows go with their document, and with their site's documents.
		if _, err := d.DeleteDocument(ctx, docs[1].ID); err != nil {
			t.Fatal(err)
		}
		if rows, _ := d.DocumentChunks(ctx, docs[1].ID); len(rows) != 0 {
			t.Fatalf("rows of a deleted document: %+v", rows)
		}
		if _, err := d.DeleteSiteDocuments(ctx, siteIDs[0], 10); err != nil {
			t.Fatal(err)
		}
		if err := d.DeleteSiteCascade(ctx, siteIDs[1]); err != nil {
			t.Fatal(err)
		}
		if n, _ := d.NewSelect().Model((*models.Chunk)(nil)).Count(ctx); n != 0 {
			t.Fatalf("%d chunk rows left after the deletes", n)
		}
		if err := d.DeleteDocumentChunks(ctx, docs[3].ID); err != nil {
			t.Fatal(err)
		}
	})
}
