package vector

import (
	"fmt"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/embed/learned"
)

// FieldsRevision is bumped when what a chunk's index entry is made of
// changes in a way IndexFormat does not otherwise show (the fields embedded
// or indexed, their order, where chunks are cut).
const FieldsRevision = 5

// IndexFormat names what a site's chunks are made of: the analyzer's rules
// (analyze.Version), the indexed fields and their weights, and the chunking
// (size and overlap in runes), and the embedded learned model's version and
// how it reads texts (a new model means new vectors; sites on another embedder re-index once
// too, which costs time but never mixes vectors). Every chunk is recorded with the format it was
// written in (models.Chunk); a worker that starts with another format
// re-indexes the sites holding older chunks, so terms, vectors and cuts of
// two formats are not left mixed in one index.
func IndexFormat(chunkSize, chunkOverlap int) string {
	return fmt.Sprintf("a%d.f%d.t%d.h%d.c%d+%d.%s.text%d", analyze.Version, FieldsRevision, TitleWeight, LeafHeadingWeight, chunkSize, chunkOverlap, learned.EnglishID, learned.TextRevision)
}
