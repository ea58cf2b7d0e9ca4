package db

import (
	"context"
	"strings"

	"github.com/uptrace/bun"

	"github.com/lorekb/lore/models"
)

// Keyword search on PostgreSQL finds content matches through a trigram index
// on documents.content_words, not on the content: the content's distinct
// words, each once, separated by a space, lower-cased by PostgreSQL. pg_trgm's
// cost on a write is the trigram extraction of the whole text, and the
// distinct words of a 30 KB page are about a fifth of it.
//
// A word is a maximal run of characters that are not word separators. The
// separators are every ASCII character other than a letter or a digit
// (controls, whitespace, punctuation, DEL); every other character, all of
// non-ASCII included, is part of a word. In UTF-8 an ASCII byte never occurs
// inside a multi-byte character, so the split works on bytes.
//
// Why the words find every match: the keyword is split at the same
// separators. A keyword found in the content by ILIKE means lower(content)
// contains lower(keyword), lower() mapping one character to one character.
// lower() never turns a separator into another character or another
// character into a separator (it leaves ASCII non-letters alone and never
// produces them from non-ASCII), so lower(w) of each word w of the keyword
// lies inside lower(c) of one word c of the content, and the column, lower()
// of the words joined by spaces, contains it: "content_words LIKE
// lower('%w%')" holds for every word of the keyword in every matching
// document (LIKE metacharacters are separators, so a word has none). Those
// terms are an exact prefilter; the content ILIKE stays the final test. A
// keyword that is one word needs no final test: lower(content) contains
// lower(keyword) exactly when lower(c) of one content word c does (the same
// argument one way; lower(c) is part of lower(content) the other), and the
// column contains lower(keyword) exactly when one of its words does (it has
// no space). This relies on lower() mapping character by character, as
// PostgreSQL's does with a libc locale (the ILIKE terms of the keyword list
// rely on it too); if the server's case mapping changes (a C library
// upgrade), "UPDATE documents SET content_words = NULL" recomputes the column.
//
// The words are computed by the Go write paths (CreateDocument,
// UpdateDocument, CreateImportedDocument(s)) and lower-cased by a trigger with
// PostgreSQL's lower() (the one ILIKE uses). The trigger computes them in
// SQL (lore_content_words, about ten times slower than Go on the same text)
// for any other writer that inserts a row without them or changes the content
// without changing them (see the content_words migration). The SQL definition
// of the separators is contentWordsPattern; TestContentWordsSQL checks that
// both agree.

// contentWordsPattern is the PostgreSQL regular expression of a run of
// separators, the same set as isWordSeparator.
const contentWordsPattern = `[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+`

// isWordSeparator reports whether the byte b separates words: an ASCII byte
// that is not a letter or a digit. NUL is included (PostgreSQL text never
// holds it).
func isWordSeparator(b byte) bool {
	switch {
	case b >= 0x80:
		return false
	case '0' <= b && b <= '9', 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z':
		return false
	}
	return true
}

// eachWord calls emit with the words of s in order, repeats included.
func eachWord(s string, emit func(w string)) {
	start := -1
	for i := 0; i < len(s); i++ {
		if isWordSeparator(s[i]) {
			if start >= 0 {
				emit(s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		emit(s[start:])
	}
}

// splitWords returns the words of s in order, repeats included.
func splitWords(s string) []string {
	var words []string
	eachWord(s, func(w string) { words = append(words, w) })
	return words
}

// ContentWords returns the distinct words of s in the order of their first
// occurrence, separated by one space: what lore_content_words(s) returns.
// Lore's document writers send it as content_words (the trigger lowers it);
// a bulk loader outside this package (the bench's COPY) can send it too, so
// that the words are not split in SQL.
func ContentWords(s string) string {
	seen := make(map[string]struct{}, len(s)/64+16)
	var b strings.Builder
	b.Grow(len(s) / 4)
	eachWord(s, func(w string) {
		if _, ok := seen[w]; ok {
			return
		}
		seen[w] = struct{}{}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	})
	return b.String()
}

// documentRow is a document as written on PostgreSQL: the model and the
// words of its content (the model does not carry them: no read needs them),
// which the insert and update trigger lower-cases.
type documentRow struct {
	models.Document `bun:",extend"`
	ContentWords    string `bun:"content_words"`
}

func newDocumentRow(doc *models.Document) *documentRow {
	return &documentRow{Document: *doc, ContentWords: ContentWords(doc.Content)}
}

// insertDocuments inserts docs in one statement, with their content words on
// PostgreSQL (as bind parameters: insertBound), and sets their ids (and other
// returned columns).
func (d *DB) insertDocuments(ctx context.Context, db bun.IDB, docs []*models.Document) error {
	if !d.Postgres() {
		_, err := db.NewInsert().Model(&docs).Exec(ctx)
		return err
	}
	rows := make([]*documentRow, len(docs))
	for i, doc := range docs {
		rows[i] = newDocumentRow(doc)
	}
	if err := insertBound(ctx, db, rows); err != nil {
		return err
	}
	for i, r := range rows {
		*docs[i] = r.Document
	}
	return nil
}
