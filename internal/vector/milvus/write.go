package milvus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/vector"
)

// upsertBatch bounds rows per request, keeping gRPC messages well under
// Milvus's limits with 800-rune chunks and 3072-dimension vectors.
const upsertBatch = 256

// Upsert inserts or replaces chunks by ID. The batch is validated whole
// before anything is sent (vector.ErrDimension for a wrong dimension);
// duplicate IDs within it collapse to the last. Large batches go in several
// requests: a failure part-way leaves some chunks written, which a retry of
// the same (idempotent) batch completes.
func (s *Store) Upsert(ctx context.Context, chunks []vector.Chunk) error {
	if len(chunks) == 0 {
		return ctx.Err()
	}
	for i, c := range chunks {
		if err := s.validate(c); err != nil {
			return fmt.Errorf("milvus: chunk %d: %w", i, err)
		}
	}
	chunks = dedupe(chunks)
	for start := 0; start < len(chunks); start += upsertBatch {
		batch := chunks[start:min(start+upsertBatch, len(chunks))]
		err := s.call(ctx, fmt.Sprintf("upsert %d chunks", len(batch)), func(cli *milvusclient.Client) error {
			_, err := cli.Upsert(ctx, s.columns(batch))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// validate checks what Milvus would otherwise reject half-way through.
// Every failure is permanent: retrying the same chunk cannot fix it.
func (s *Store) validate(c vector.Chunk) error {
	var err error
	switch {
	case c.ID == "":
		err = errors.New("empty ID")
	case len(c.ID) > maxIDLen:
		err = fmt.Errorf("ID of %d bytes exceeds %d", len(c.ID), maxIDLen)
	case len(c.Vector) != s.dim:
		return fmt.Errorf("%w: chunk %s has %d dimensions, store has %d", vector.ErrDimension, c.ID, len(c.Vector), s.dim)
	case len(c.Text) > maxTextLen:
		err = fmt.Errorf("chunk %s text of %d bytes exceeds %d (LORE_CHUNK_SIZE is bounded to fit)", c.ID, len(c.Text), maxTextLen)
	case c.Index < math.MinInt32 || c.Index > math.MaxInt32:
		err = fmt.Errorf("chunk %s index %d out of int32 range", c.ID, c.Index)
	}
	for _, x := range c.Vector {
		if err == nil && (math.IsNaN(float64(x)) || math.IsInf(float64(x), 0)) {
			err = fmt.Errorf("chunk %s has a non-finite vector value", c.ID)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", vector.ErrPermanent, err)
	}
	return nil
}

// dedupe keeps the last chunk of each ID, in first-seen order.
func dedupe(chunks []vector.Chunk) []vector.Chunk {
	last := make(map[string]int, len(chunks))
	for i, c := range chunks {
		last[c.ID] = i
	}
	if len(last) == len(chunks) {
		return chunks
	}
	out := make([]vector.Chunk, 0, len(last))
	for i, c := range chunks {
		if last[c.ID] == i {
			out = append(out, c)
		}
	}
	return out
}

// columns builds the column-based upsert of a batch. The sparse field is
// not sent: the BM25 function computes it from search_text.
func (s *Store) columns(batch []vector.Chunk) milvusclient.UpsertOption {
	n := len(batch)
	ids := make([]string, n)
	sites := make([]int64, n)
	docs := make([]int64, n)
	versions := make([]int64, n)
	indexes := make([]int32, n)
	titles := make([]string, n)
	headings := make([]string, n)
	texts := make([]string, n)
	search := make([]string, n)
	vecs := make([][]float32, n)
	for i, c := range batch {
		ids[i] = c.ID
		sites[i] = c.SiteID
		docs[i] = c.DocumentID
		versions[i] = c.Version
		indexes[i] = int32(c.Index)
		titles[i] = s.fit(c.ID, fieldTitle, c.Title, maxTitleLen)
		headings[i] = s.fit(c.ID, fieldHeading, c.Heading, maxHeadingLen)
		texts[i] = c.Text
		search[i] = s.fitTerms(c.ID, searchText(c.Title, c.Heading, c.Text))
		vecs[i] = c.Vector
	}
	return milvusclient.NewColumnBasedInsertOption(s.collection).
		WithVarcharColumn(fieldID, ids).
		WithInt64Column(fieldSite, sites).
		WithInt64Column(fieldDocument, docs).
		WithInt64Column(fieldVersion, versions).
		WithInt32Column(fieldChunkIndex, indexes).
		WithVarcharColumn(fieldTitle, titles).
		WithVarcharColumn(fieldHeading, headings).
		WithVarcharColumn(fieldText, texts).
		WithVarcharColumn(fieldSearchText, search).
		WithFloatVectorColumn(fieldVector, s.dim, vecs)
}

// searchText is what keyword search indexes for a chunk: the terms of its
// title, heading and text, each analyzed on its own as the embedded store
// does, separated by spaces for search_text's whitespace analyzer.
func searchText(title, heading, text string) string {
	var b strings.Builder
	emit := func(term string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(term)
	}
	analyze.Each(title, emit)
	analyze.Each(heading, emit)
	analyze.Each(text, emit)
	return b.String()
}

// fitTerms cuts the terms to search_text's byte limit at a term boundary,
// logging the cut: the chunk stays searchable by the terms that fit. (Text
// within LORE_CHUNK_SIZE's bound gives fewer terms than that; a huge title
// might not.)
func (s *Store) fitTerms(id, terms string) string {
	if len(terms) <= maxTextLen {
		return terms
	}
	cut := terms[:strings.LastIndexByte(terms[:maxTextLen+1], ' ')+1]
	cut = strings.TrimRight(cut, " ")
	s.log.Warn("milvus keyword terms cut to the field limit", "chunk", id, "field", fieldSearchText, "bytes", len(terms), "kept", len(cut))
	return cut
}

// fit cuts a value to its field's byte limit on a rune boundary, logging
// the cut: Milvus would reject the whole batch over one long title.
func (s *Store) fit(id, field, v string, limit int) string {
	if len(v) <= limit {
		return v
	}
	cut := truncate(v, limit)
	s.log.Warn("milvus field value cut to its limit", "chunk", id, "field", field, "bytes", len(v), "limit", limit, "kept", len(cut))
	return cut
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// DeleteDocument removes all versions of the document.
func (s *Store) DeleteDocument(ctx context.Context, documentID int64) error {
	return s.delete(ctx, documentFilter(documentID))
}

// DeleteStaleVersions removes the document's chunks of other versions.
func (s *Store) DeleteStaleVersions(ctx context.Context, documentID, keepVersion int64) error {
	return s.delete(ctx, fmt.Sprintf("%s && %s != %d", documentFilter(documentID), fieldVersion, keepVersion))
}

// DeleteSite removes all chunks of the site.
func (s *Store) DeleteSite(ctx context.Context, siteID int64) error {
	return s.delete(ctx, siteFilter(siteID))
}

func (s *Store) delete(ctx context.Context, expr string) error {
	return s.call(ctx, "delete "+expr, func(cli *milvusclient.Client) error {
		_, err := cli.Delete(ctx, milvusclient.NewDeleteOption(s.collection).WithExpr(expr))
		return err
	})
}

// siteFilter is the expression every read carries: the isolation boundary,
// in the form (partition key == value) that lets Milvus search only the
// site's partition.
func siteFilter(siteID int64) string { return fmt.Sprintf("%s == %d", fieldSite, siteID) }

func documentFilter(documentID int64) string {
	return fmt.Sprintf("%s == %d", fieldDocument, documentID)
}
