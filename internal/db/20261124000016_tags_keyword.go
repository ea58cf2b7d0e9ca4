package db

// The document keyword also matches tags (the reference's keyword covers
// title, content, summary and tags). On PostgreSQL the keyword list finds
// matches through trigram indexes only (see listDocumentsByKeyword), so tags
// get one like title, summary and content have.
func init() {
	migrations.MustRegister(onPostgres("CREATE INDEX IF NOT EXISTS documents_tags_trgm_idx ON documents USING gin (tags gin_trgm_ops)"), nil)
}
