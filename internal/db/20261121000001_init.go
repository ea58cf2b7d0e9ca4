package db

import (
	"context"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// The initial schema: every table from the models, and the indexes of every
// list filter and sort. bun names a migration after its file.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := createTables(ctx, db, models.All()...); err != nil {
			return err
		}
		idx := []string{
			"CREATE INDEX IF NOT EXISTS sites_tenant_idx ON sites (tenant_id, status)",
			"CREATE INDEX IF NOT EXISTS sites_status_idx ON sites (status, id)",
			"CREATE INDEX IF NOT EXISTS collections_site_parent_idx ON collections (site_id, parent_id, sort_order)",
			"CREATE INDEX IF NOT EXISTS documents_site_status_created_idx ON documents (site_id, status, created_at)",
			"CREATE INDEX IF NOT EXISTS documents_status_created_idx ON documents (status, created_at)",
			"CREATE INDEX IF NOT EXISTS documents_collection_idx ON documents (collection_id, status)",
			"CREATE INDEX IF NOT EXISTS documents_updated_idx ON documents (updated_at)",
			"CREATE INDEX IF NOT EXISTS documents_title_idx ON documents (title)",
			"CREATE INDEX IF NOT EXISTS documents_tenant_idx ON documents (tenant_id, status)",
			"CREATE INDEX IF NOT EXISTS users_role_status_idx ON users (role, status)",
			"CREATE INDEX IF NOT EXISTS users_created_idx ON users (created_at)",
			"CREATE INDEX IF NOT EXISTS view_events_doc_idx ON view_events (document_id)",
			"CREATE INDEX IF NOT EXISTS view_events_site_created_idx ON view_events (site_id, created_at)",
			"CREATE INDEX IF NOT EXISTS chat_sessions_member_idx ON chat_sessions (member_id, updated_at)",
			"CREATE INDEX IF NOT EXISTS chat_sessions_site_idx ON chat_sessions (site_id, created_at)",
			"CREATE INDEX IF NOT EXISTS chat_messages_thread_idx ON chat_messages (thread_id, position)",
			"CREATE INDEX IF NOT EXISTS chat_messages_seq_idx ON chat_messages (thread_id, message_seq)",
			"CREATE INDEX IF NOT EXISTS tool_results_thread_idx ON tool_results (thread_id)",
			"CREATE INDEX IF NOT EXISTS chat_feedback_msg_idx ON chat_feedback (chat_message_id)",
			"CREATE INDEX IF NOT EXISTS site_api_keys_site_idx ON site_api_keys (site_id)",
		}
		if isPostgres(db) {
			// Trigram GIN indexes keep ILIKE '%kw%' keyword search fast at 100k
			// documents; ILIKE stays correct for CJK even where trigrams do not help.
			idx = append(idx,
				"CREATE EXTENSION IF NOT EXISTS pg_trgm",
				"CREATE INDEX IF NOT EXISTS documents_title_trgm_idx ON documents USING gin (title gin_trgm_ops)",
				"CREATE INDEX IF NOT EXISTS documents_content_trgm_idx ON documents USING gin (content gin_trgm_ops)",
				"CREATE INDEX IF NOT EXISTS documents_summary_trgm_idx ON documents USING gin (summary gin_trgm_ops)",
				"CREATE INDEX IF NOT EXISTS chat_sessions_title_trgm_idx ON chat_sessions USING gin (title gin_trgm_ops)",
			)
		}
		return execAll(ctx, db, idx...)
	}, nil)
}
