package db

import (
	"context"
	"fmt"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Document revisions (models.DocumentRevision). A database created by this
// version already has the table from the first migration. Every existing
// document gets its current title and content as its first stored revision
// (numbered by its content_version; source create for a document never
// edited, else edit), so that each document has a current revision to diff
// against and to name in citations. Pages of documents by id keep the memory
// of the copy bounded; rows already there are kept (a migration interrupted
// and run again).
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := createTables(ctx, db, (*models.DocumentRevision)(nil)); err != nil {
			return err
		}
		if err := execAll(ctx, db, "CREATE INDEX IF NOT EXISTS document_revisions_site_idx ON document_revisions (site_id)"); err != nil {
			return err
		}
		var last int64
		for {
			var docs []models.Document
			err := db.NewSelect().Model(&docs).
				Column("id", "tenant_id", "site_id", "title", "content", "author", "content_version", "updated_at").
				Where("id > ?", last).Order("id").Limit(200).Scan(ctx)
			if err != nil {
				return fmt.Errorf("revisions of existing documents: %w", err)
			}
			if len(docs) == 0 {
				return nil
			}
			rows := make([]models.DocumentRevision, len(docs))
			for i := range docs {
				src := models.RevisionEdit
				if docs[i].ContentVersion <= 1 {
					src = models.RevisionCreate
				}
				rows[i] = *newRevision(&docs[i], RevisionMeta{Source: src, Author: docs[i].Author}, docs[i].UpdatedAt)
			}
			if err := insertRows(ctx, db, rows, "CONFLICT DO NOTHING"); err != nil {
				return fmt.Errorf("revisions of existing documents: %w", err)
			}
			last = docs[len(docs)-1].ID
		}
	}, nil)
}
