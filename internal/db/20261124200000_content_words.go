package db

import (
	"context"

	"github.com/uptrace/bun"
)

// documents.content_words (PostgreSQL): the content's distinct words (see
// contentwords.go), lower-cased, indexed with gin_trgm_ops in place of the
// content, whose trigram index cost most of PostgreSQL's CPU on document
// writes.
//
// lore_content_words(text) is the SQL definition of the words, the same as
// contentWords in Go (TestContentWordsSQL): split at runs of ASCII characters
// other than letters and digits, distinct, in the order of their first
// occurrence, separated by a space. The column is lower() of them, applied by
// PostgreSQL (the function ILIKE applies) in a trigger on every insert and on
// every update that changes the content or the words. Lore's own writers send
// the words (computing them in SQL costs about as much as the trigram index
// it saves); for any other writer the trigger computes them: an insert
// without them (NULL), an update that changes the content but not the words.
//
// Existing rows are filled here, before the triggers exist (one rewrite of
// the table), then the words index is built and the content index dropped.
func init() {
	migrations.MustRegister(postgresOnly(func(ctx context.Context, db *bun.DB) error {
		// The words are compressed like the content (see the keyword
		// migration, which made the content lz4 wherever the server has
		// it): a keyword list rechecks them on every candidate row.
		lz4 := "SELECT 1"
		same, err := contentIsLZ4(ctx, db)
		if err != nil {
			return err
		}
		if same {
			lz4 = "ALTER TABLE documents ALTER COLUMN content_words SET COMPRESSION lz4"
		}
		return execAll(ctx, db,
			`CREATE OR REPLACE FUNCTION lore_content_words(t text) RETURNS text
				LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
				SELECT coalesce(string_agg(w, ' ' ORDER BY n), '') FROM (
					SELECT w, min(n) AS n
					FROM regexp_split_to_table(t, '[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+') WITH ORDINALITY AS s(w, n)
					WHERE w <> '' GROUP BY w) AS words
			$$`,
			`CREATE OR REPLACE FUNCTION lore_documents_content_words() RETURNS trigger
				LANGUAGE plpgsql AS $$
				BEGIN
					IF NEW.content_words IS NULL OR TG_OP = 'UPDATE'
						AND NEW.content_words IS NOT DISTINCT FROM OLD.content_words THEN
						NEW.content_words := lore_content_words(NEW.content);
					END IF;
					NEW.content_words := lower(NEW.content_words);
					RETURN NEW;
				END
			$$`,
			"ALTER TABLE documents ADD COLUMN IF NOT EXISTS content_words text",
			lz4,
			"UPDATE documents SET content_words = lower(lore_content_words(content)) WHERE content_words IS NULL",
			"DROP TRIGGER IF EXISTS documents_content_words_insert ON documents",
			`CREATE TRIGGER documents_content_words_insert BEFORE INSERT ON documents
				FOR EACH ROW EXECUTE FUNCTION lore_documents_content_words()`,
			"DROP TRIGGER IF EXISTS documents_content_words_update ON documents",
			`CREATE TRIGGER documents_content_words_update BEFORE UPDATE OF content, content_words ON documents
				FOR EACH ROW WHEN (NEW.content IS DISTINCT FROM OLD.content OR NEW.content_words IS DISTINCT FROM OLD.content_words)
				EXECUTE FUNCTION lore_documents_content_words()`,
			"CREATE INDEX IF NOT EXISTS documents_content_words_trgm_idx ON documents USING gin (content_words gin_trgm_ops)",
			"DROP INDEX IF EXISTS documents_content_trgm_idx",
		)
	}), nil)
}
