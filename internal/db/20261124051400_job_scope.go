package db

// jobs gain what a job concerns (tenant_id, site_id, document_id) and its
// human title, so a job's scope is checked from its row and job views name
// their subject. A database created by this version already has the columns
// (the first migration creates the tables from the current models); older
// ones get them with defaults (0 and ”), which rewrites no rows on
// PostgreSQL 11+ and SQLite.
func init() {
	migrations.MustRegister(addingColumns("jobs",
		[2]string{"tenant_id", "BIGINT NOT NULL DEFAULT 0"}, [2]string{"site_id", "BIGINT NOT NULL DEFAULT 0"},
		[2]string{"document_id", "BIGINT NOT NULL DEFAULT 0"}, [2]string{"title", "TEXT NOT NULL DEFAULT ''"}), nil)
}
