package models

import (
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/uptrace/bun"
)

// Data source types: Lore's own object store, or an external S3-compatible
// bucket.
const (
	DataSourceInternal = "internal"
	DataSourceS3       = "s3"
)

// DataSource is a place files are imported from. SiteID scopes it: a site's
// data source is managed by that site's administrators; one without a site
// belongs to the tenant and only admins see it.
type DataSource struct {
	bun.BaseModel `bun:"table:data_sources"`
	ID            int64     `bun:"id,pk,autoincrement"`
	TenantID      int64     `bun:"tenant_id,notnull"`
	SiteID        *int64    `bun:"site_id"`
	Name          string    `bun:"name,notnull"`
	Type          string    `bun:"type,notnull"`
	Description   string    `bun:"description,notnull,default:''"`
	Config        string    `bun:"config,notnull,default:'{}'"` // JSON; holds the secret key of an external bucket
	CreatedAt     time.Time `bun:"created_at,notnull"`
	UpdatedAt     time.Time `bun:"updated_at,notnull"`
}

// ImportItem records the document one file of an import created. Its key
// (import, file index) is the primary key, so a retried import activity
// finds the document it already made instead of creating a second one.
type ImportItem struct {
	bun.BaseModel `bun:"table:import_items"`
	ImportID      string    `bun:"import_id,pk"`
	ItemIndex     int       `bun:"item_index,pk"`
	DocumentID    int64     `bun:"document_id,notnull"`
	CreatedAt     time.Time `bun:"created_at,notnull"`
}

// ReadingTime estimates minutes at 200 words per minute, at least 1. A word
// is a run of letters or digits, except that each CJK character counts as a
// word of its own (those scripts do not separate words with spaces).
func ReadingTime(content string) int {
	return max(1, countWords(content)/200)
}

// asciiWordByte is 1 for the ASCII bytes that continue a word: letters,
// digits, ' and _ (the rune rule below, for bytes under 0x80).
var asciiWordByte = func() (t [128]uint8) {
	for c := range 128 {
		r := rune(c)
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '_' {
			t[c] = 1
		}
	}
	return t
}()

// countWords counts the words ReadingTime reads: ASCII bytes through a table
// (a word starts where a word byte follows a non-word one), other characters
// by the rune rule (most documents are mostly ASCII).
func countWords(content string) int {
	words, in := 0, uint8(0)
	for i := 0; i < len(content); {
		if c := content[i]; c < utf8.RuneSelf {
			w := asciiWordByte[c]
			words += int(w &^ in)
			in = w
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(content[i:])
		i += size
		switch {
		case analyze.IsCJK(r):
			words++
			in = 0
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			words += int(1 &^ in)
			in = 1
		default:
			in = 0
		}
	}
	return words
}
