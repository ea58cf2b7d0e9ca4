package db_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   nil,
		"fs.readFile(path)":  {"fs", "readFile", "path"},
		`a_b 50% C:\path\to`: {"a", "b", "50", "C", "path", "to"},
		"  Straße\tΣΟΦΙΑ\n数据库。索引 ": {"Straße", "ΣΟΦΙΑ", "数据库。索引"},
		"x\x7fy\x01z~": {"x", "y", "z"},
	} {
		if got := db.SplitWords(in); !slices.Equal(got, want) {
			t.Errorf("SplitWords(%q) = %q, want %q", in, got, want)
		}
	}
	if got := db.ContentWords("b a b, A a. c"); got != "b a A c" {
		t.Errorf("ContentWords = %q", got)
	}
}

// TestContentWordsSQL checks that lore_content_words (the migration's SQL, the
// triggers' and the backfill's definition) and contentWords (Go, what lore's
// writers send) agree byte for byte: every ASCII character between two
// letters, non-ASCII characters, and random texts mixing both.
func TestContentWordsSQL(t *testing.T) {
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	var def string
	if err := d.NewRaw("SELECT pg_get_functiondef('lore_content_words(text)'::regprocedure)").Scan(ctx, &def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "'"+db.ContentWordsPattern+"'") {
		t.Fatalf("lore_content_words does not split at %s:\n%s", db.ContentWordsPattern, def)
	}
	var texts []string
	for c := 1; c < 128; c++ {
		texts = append(texts, "ab"+string(rune(c))+"cd"+string(rune(c))+string(rune(c))+"ab")
	}
	nonASCII := []string{"é", "É", "ß", "ẞ", "Σ", "ς", "\u00a0", "\u2003", "\u3000", "。", "，", "、", "—", "…", "«", "€",
		"数", "据", "🙂", "\u200b", "\ufeff", "İ", "K"}
	for _, s := range nonASCII {
		texts = append(texts, "ab"+s+"cd "+s+" "+s+s)
	}
	alphabet := []string{" ", "\t", "\n", ".", "_", "%", `\`, ",", "-", "'", "a", "B", "z", "0", "9", "é", "Σ", "ß", "数", "。", "\u00a0", "🙂"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var b strings.Builder
		for range rng.IntN(200) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	var got []string
	if err := d.NewRaw("SELECT lore_content_words(t) FROM unnest(?::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
		pgTextArray(texts)).Scan(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("%d results for %d texts", len(got), len(texts))
	}
	for i, text := range texts {
		if want := db.ContentWords(text); got[i] != want {
			t.Errorf("text %q: SQL %q, Go %q", text, got[i], want)
		}
	}
}

// pgTextArray renders ss as a PostgreSQL text array literal.
func pgTextArray(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// keywordEquivalenceCorpus is what TestKeywordWordsEquivalence searches:
// punctuation inside words, mixed case, non-ASCII cased letters, CJK with and
// without CJK punctuation, LIKE metacharacters.
var keywordEquivalenceCorpus = []struct{ title, summary, tags, content string }{
	{"Files", "", `["io"]`, "Use fs.readFile to read a file; see also fs.writeFile(path, data)."},
	{"Vars", "", "[]", "the a_b variable, 50% of the disk and C:\\path\\to\\file.txt on Windows"},
	{"École", "", "[]", "ÉCOLE publique, Straße und STRASSE; ΣΟΦΙΑ and σοφία, Ärger"},
	{"CJK", "", "[]", "数据库的设计。数据库管理系统，索引与查询"},
	{"CJK plain", "", "[]", "数据库管理"},
	{"Mixed", "", "[]", "Mixed CASE Keyword-Search with a hyphen\tand\ttabs\nand lines"},
	{"Meta", "", "[]", "100% sure_thing with %percent, _under and back\\slash, e%p"},
	{"Short", "", "[]", "ab cd ef g"},
	{"Title only readfile", "", "[]", "nothing here"},
	{"Summary", "about fs.readFile and DATA", "[]", "see the summary"},
	{"Tags", "", `["Keyword-Search","数据库"]`, "tagged"},
	{"Empty", "", "[]", ""},
	{"Signs", "", "[]", "K is the Kelvin sign; İstanbul, ΟΔΟΣ and οδός; naïve café—déjà vu…"},
}

var keywordEquivalenceKeywords = []string{
	"fs.readFile", "FS.READFILE", "readfile", "fs.readfile(", "read a file", "to read a", "file; see",
	"fs.writeFile(path, data)", "a_b", "A_B", "a_b variable", "50%", "50% of", "C:\\path", "c:\\PATH\\to\\FILE.TXT",
	"école", "ÉCOLE PUB", "straße", "STRASSE", "strasse", "σοφία", "ΣΟΦΊΑ", "ΣΟΦΙΑ AND", "ärger", "ÄRGER",
	"数据库", "数据库的", "。数据库管理", "管理系统，索引", "数据", "库", "管理",
	"ab", "b c", "d e", "ab cd", "g", "%", "_", "\\", "e%p", "%p", "100%", "sure_thing", "_under", "back\\slash",
	"keyword-search", "Keyword Search", "with a hyphen", "hyphen\tand", "TABS\nAND", "and", "nothing", "absent",
	"data", "summary", "tagged", "io", "abcdef",
	"kelvin", "k", "K", "istanbul", "İSTANBUL", "οδος", "ΟΔΟΣ", "οδός", "café—déjà", "CAFÉ", "vu…", "…",
	"  readfile", "readfile ", "索引与", "IS THE", "İ",
}

// keywordReference returns the ids of the documents whose title, summary,
// tags or content contain kw case-insensitively: the plain ILIKE query the
// keyword list must agree with.
func keywordReference(t *testing.T, d *db.DB, kw string) []int64 {
	t.Helper()
	var ids []int64
	pat := db.Like(kw)
	err := d.NewRaw(`SELECT id FROM documents WHERE title ILIKE ? ESCAPE '\' OR summary ILIKE ? ESCAPE '\'
		OR tags ILIKE ? ESCAPE '\' OR content ILIKE ? ESCAPE '\' ORDER BY id`, pat, pat, pat, pat).Scan(context.Background(), &ids)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func checkKeywordEquivalence(t *testing.T, d *db.DB, when string) {
	t.Helper()
	ctx := context.Background()
	matched := 0
	for _, kw := range keywordEquivalenceKeywords {
		docs, total, err := d.ListDocuments(ctx, db.DocumentFilter{Keyword: kw, OrderBy: "id", OrderDir: "asc", Limit: 1000})
		if err != nil {
			t.Fatalf("%s: %q: %v", when, kw, err)
		}
		var got []int64
		for _, m := range docs {
			got = append(got, m.ID)
		}
		want := keywordReference(t, d, kw)
		if !slices.Equal(got, want) || total != len(want) {
			t.Errorf("%s: keyword %q: ids %v total %d, reference %v", when, kw, got, total, want)
		}
		if len(want) > 0 {
			matched++
		}
	}
	if matched < len(keywordEquivalenceKeywords)*2/3 {
		t.Fatalf("%s: only %d of %d keywords match anything: the corpus does not test much", when, matched, len(keywordEquivalenceKeywords))
	}
}

// insertRawDocument writes a published document with plain SQL, as a writer
// other than lore's would (without content_words), and returns its id.
func insertRawDocument(t *testing.T, d *db.DB, site *models.Site, title, summary, tags, content string) int64 {
	t.Helper()
	var id int64
	err := d.NewRaw(`INSERT INTO documents (tenant_id, site_id, title, summary, tags, content, status, vector_status,
		created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'published', 'none', now(), now()) RETURNING id`,
		site.TenantID, site.ID, title, summary, tags, content).Scan(context.Background(), &id)
	if err != nil {
		t.Fatalf("insert %q: %v", title, err)
	}
	return id
}

// wantWords is what documents.content_words must hold for content: lower()
// of its words.
func wantWords(t *testing.T, d *db.DB, content string) string {
	t.Helper()
	var w string
	if err := d.NewRaw("SELECT lower(?)", db.ContentWords(content)).Scan(context.Background(), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func contentWordsOf(t *testing.T, d *db.DB, id int64) string {
	t.Helper()
	var w string
	if err := d.NewRaw("SELECT content_words FROM documents WHERE id = ?", id).Scan(context.Background(), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestKeywordWordsEquivalence checks on PostgreSQL that the keyword list
// (content found through the words prefilter) returns exactly the rows of a
// plain ILIKE on title, summary, tags and content: for rows written before
// the content_words migration (its backfill), by lore's writers (words from
// Go), by other writers (the triggers), and after content updates of each.
func TestKeywordWordsEquivalence(t *testing.T) {
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	site := docTestSite(t, d, "words")

	// The state before the migration: no column, no triggers, the content
	// index; then rows written as the old code did; then the migration.
	for _, stmt := range []string{
		"DROP TRIGGER documents_content_words_insert ON documents",
		"DROP TRIGGER documents_content_words_update ON documents",
		"DROP INDEX documents_content_words_trgm_idx",
		"ALTER TABLE documents DROP COLUMN content_words",
		"CREATE INDEX documents_content_trgm_idx ON documents USING gin (content gin_trgm_ops)",
		"DELETE FROM bun_migrations WHERE name = '20261124200000'",
	} {
		if _, err := d.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var old []int64
	for _, c := range keywordEquivalenceCorpus {
		old = append(old, insertRawDocument(t, d, site, "old "+c.title, c.summary, c.tags, c.content))
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.NewRaw("SELECT count(*) FROM pg_indexes WHERE indexname = 'documents_content_trgm_idx'").Scan(ctx, &n); err != nil || n != 0 {
		t.Fatalf("content trigram index still there: %d %v", n, err)
	}
	var compression []string
	if err := d.NewRaw(`SELECT attcompression::text FROM pg_attribute WHERE attrelid = 'documents'::regclass
		AND attname IN ('content', 'content_words') ORDER BY attname`).Scan(ctx, &compression); err != nil {
		t.Fatal(err)
	}
	if len(compression) != 2 || compression[0] != compression[1] {
		t.Fatalf("compression of content, content_words: %q", compression)
	}
	for i, id := range old {
		if got, want := contentWordsOf(t, d, id), wantWords(t, d, keywordEquivalenceCorpus[i].content); got != want {
			t.Fatalf("backfill of row %d: %q, want %q", id, got, want)
		}
	}
	checkKeywordEquivalence(t, d, "backfilled")

	// lore's writers (CreateDocument, imports) and a plain SQL insert.
	var created []int64
	for _, c := range keywordEquivalenceCorpus {
		m := &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: "new " + c.title, Summary: c.summary,
			Tags: c.tags, Content: c.content, Status: models.DocPublished, VectorStatus: models.VecNone}
		if err := d.CreateDocument(ctx, m); err != nil {
			t.Fatal(err)
		}
		created = append(created, m.ID)
	}
	imp := make([]db.NewImportedDoc, len(keywordEquivalenceCorpus))
	for i, c := range keywordEquivalenceCorpus {
		imp[i] = db.NewImportedDoc{Index: i, Doc: &models.Document{TenantID: site.TenantID, SiteID: site.ID,
			Title: "imported " + c.title, Summary: c.summary, Tags: c.tags, Content: c.content,
			Status: models.DocPublished, VectorStatus: models.VecNone}}
	}
	if _, err := d.CreateImportedDocuments(ctx, "words-import", imp); err != nil {
		t.Fatal(err)
	}
	for i, nd := range imp {
		if nd.Doc.ID == 0 {
			t.Fatalf("imported document %d has no id", i)
		}
		created = append(created, nd.Doc.ID)
	}
	var raw []int64
	for _, c := range keywordEquivalenceCorpus {
		raw = append(raw, insertRawDocument(t, d, site, "raw "+c.title, c.summary, c.tags, c.content))
	}
	for i, id := range append(slices.Clone(created), raw...) {
		c := keywordEquivalenceCorpus[i%len(keywordEquivalenceCorpus)]
		if got, want := contentWordsOf(t, d, id), wantWords(t, d, c.content); got != want {
			t.Fatalf("row %d: content_words %q, want %q", id, got, want)
		}
	}
	checkKeywordEquivalence(t, d, "inserted")

	// Content updates: through UpdateDocument (words from Go), through SQL
	// (the update trigger), and a write that leaves the content alone.
	rot := func(i int) string {
		return keywordEquivalenceCorpus[(i+5)%len(keywordEquivalenceCorpus)].content + " updated " + fmt.Sprint(i)
	}
	for i, id := range created {
		_, after, err := d.UpdateDocument(ctx, id, func(doc *models.Document) error {
			doc.Content = rot(i)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := contentWordsOf(t, d, id), wantWords(t, d, after.Content); got != want {
			t.Fatalf("UpdateDocument %d: content_words %q, want %q", id, got, want)
		}
	}
	for i, id := range append(slices.Clone(old), raw...) {
		if _, err := d.ExecContext(ctx, "UPDATE documents SET content = ?, views = views + 1 WHERE id = ?", rot(i), id); err != nil {
			t.Fatal(err)
		}
		if got, want := contentWordsOf(t, d, id), wantWords(t, d, rot(i)); got != want {
			t.Fatalf("SQL update %d: content_words %q, want %q", id, got, want)
		}
	}
	if _, _, err := d.UpdateDocument(ctx, created[0], func(doc *models.Document) error {
		doc.Title = "retitled"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := contentWordsOf(t, d, created[0]), wantWords(t, d, rot(0)); got != want {
		t.Fatalf("title update: content_words %q, want %q", got, want)
	}
	checkKeywordEquivalence(t, d, "updated")
}

// TestKeywordWordsIndexPlan checks on a few thousand PostgreSQL rows that an
// indexed keyword list finds content matches through the words index (a
// bitmap scan) and reads no table sequentially.
func TestKeywordWordsIndexPlan(t *testing.T) {
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	site := docTestSite(t, d, "plan")
	loadKeywordCorpus(t, d, site, 3000)
	rec := &sqlRecorder{}
	d.DB = d.WithQueryHook(rec)
	for _, kw := range []string{kwRare, "Quokkafrost", kwCJK, "fs.readFile", kwRare + " " + kwCommon} {
		rec.mu.Lock()
		rec.sql = nil
		rec.mu.Unlock()
		if _, _, err := d.ListDocuments(ctx, db.DocumentFilter{Public: true, SiteID: site.ID, Keyword: kw, ExcludeContent: true, Limit: 10}); err != nil {
			t.Fatal(err)
		}
		explained := 0
		for _, e := range rec.explain(t, d, "EXPLAIN") {
			if !strings.HasPrefix(e.sql, "WITH") {
				continue
			}
			if !strings.Contains(e.plan, "Bitmap Index Scan on documents_content_words_trgm_idx") ||
				strings.Contains(e.plan, "Seq Scan") || len(e.set) == 0 {
				t.Fatalf("keyword %q: %v\n%s\n%s", kw, e.set, e.sql, e.plan)
			}
			explained++
			t.Logf("keyword %q:\n%s", kw, e.plan)
		}
		if explained == 0 {
			t.Fatalf("keyword %q: no indexed list query seen", kw)
		}
	}
}
