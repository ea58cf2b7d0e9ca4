package models

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/uptrace/bun"
)

// Revision sources: what wrote a document's title or content.
const (
	RevisionCreate  = "create"
	RevisionEdit    = "edit"
	RevisionImport  = "import"
	RevisionRestore = "restore"
	RevisionSync    = "sync"
)

// DocumentRevision is one version of a document's title and content. Its
// number is the document's content_version when that text was current, the
// number chunk rows and vector hits carry, so an answer's citation names the
// revision it quoted. A revision is written in the same transaction as the
// document change it records; the current one is never pruned.
type DocumentRevision struct {
	bun.BaseModel `bun:"table:document_revisions"`
	DocumentID    int64  `bun:"document_id,pk"`
	Revision      int64  `bun:"revision,pk"`
	SiteID        int64  `bun:"site_id,notnull"`
	TenantID      int64  `bun:"tenant_id,notnull"`
	Title         string `bun:"title,notnull"`
	Content       string `bun:"content,notnull,default:''"`
	// ContentHash is RevisionHash(title, content).
	ContentHash string `bun:"content_hash,notnull"`
	Source      string `bun:"source,notnull"`
	// AuthorID is the user who made the change (nil for imports without
	// one, syncs and revisions recorded from documents that predate them).
	AuthorID *int64 `bun:"author_id"`
	// Author names who made the change: a user's email, else the writer's
	// own name (an import's author, a data source).
	Author string `bun:"author,notnull,default:''"`
	// RestoredFrom is the revision a restore copied.
	RestoredFrom *int64    `bun:"restored_from"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

// RevisionHash is the content hash of a revision: SHA-256 of the title, a
// NUL and the content, in hex.
func RevisionHash(title, content string) string {
	h := sha256.New()
	h.Write([]byte(title))
	h.Write([]byte{0})
	h.Write([]byte(content))
	return hex.EncodeToString(h.Sum(nil))
}
