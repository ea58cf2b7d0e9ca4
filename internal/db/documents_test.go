package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

func docTestSite(t *testing.T, d *db.DB, name string) *models.Site {
	t.Helper()
	return insertTestSite(t, d, defaultTenant(t, d), name, false)
}

func docTestCollection(t *testing.T, d *db.DB, site *models.Site, parent *models.Collection, title string) *models.Collection {
	t.Helper()
	c := &models.Collection{TenantID: site.TenantID, SiteID: site.ID, Title: title}
	if parent != nil {
		c.ParentID = &parent.ID
	}
	if err := d.CreateCollection(context.Background(), c, nil); err != nil {
		t.Fatalf("create collection %s: %v", title, err)
	}
	return c
}

func docTestDocument(t *testing.T, d *db.DB, site *models.Site, col *models.Collection, title, content string) *models.Document {
	t.Helper()
	doc := &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: title, Content: content,
		Tags: "[]", Status: models.DocPublished, VectorStatus: models.VecNone}
	if col != nil {
		doc.CollectionID = &col.ID
	}
	if err := d.CreateDocument(context.Background(), doc); err != nil {
		t.Fatalf("create document %s: %v", title, err)
	}
	return doc
}

func docViews(t *testing.T, d *db.DB, id int64) int64 {
	t.Helper()
	doc, err := d.GetDocument(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return doc.Views
}

func docEvents(t *testing.T, d *db.DB, id int64) int {
	t.Helper()
	return countWhere(t, d, (*models.ViewEvent)(nil), "document_id = ?", id)
}

func TestViewRecorderFlushAndRetry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "views")
		a := docTestDocument(t, d, site, nil, "A", "x")
		b := docTestDocument(t, d, site, nil, "B", "y")
		r := db.NewViewRecorder(d, time.Hour) // flushed by hand only
		defer r.Close(ctx)
		for i := 1; i <= 3; i++ {
			if n := r.Record(site.ID, a.ID, "10.0.0.1", "ua/1", "https://ref.example/"); n != int64(i) {
				t.Fatalf("pending after %d records = %d", i, n)
			}
		}
		r.Record(site.ID, b.ID, "10.0.0.2", "ua/2", "")

		// A failing flush (cancelled context) keeps everything pending.
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := r.Flush(cancelled); err == nil {
			t.Fatal("flush with a cancelled context succeeded")
		}
		if r.Pending(a.ID) != 3 || docViews(t, d, a.ID) != 0 {
			t.Fatalf("after failed flush: pending %d views %d", r.Pending(a.ID), docViews(t, d, a.ID))
		}
		r.Record(site.ID, a.ID, "10.0.0.1", "ua/1", "")
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if v := docViews(t, d, a.ID); v != 4 {
			t.Fatalf("views of a = %d, want 4", v)
		}
		if v := docViews(t, d, b.ID); v != 1 {
			t.Fatalf("views of b = %d, want 1", v)
		}
		if n := docEvents(t, d, a.ID); n != 4 {
			t.Fatalf("events of a = %d, want 4", n)
		}
		var ev models.ViewEvent
		if err := d.NewSelect().Model(&ev).Where("document_id = ?", b.ID).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if ev.IP != "10.0.0.2" || ev.UserAgent != "ua/2" || ev.SiteID != site.ID {
			t.Fatalf("event: %+v", ev)
		}
		if r.Pending(a.ID) != 0 {
			t.Fatalf("pending after flush: %d", r.Pending(a.ID))
		}
		// Nothing pending: a flush is a no-op.
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// Header bytes that are not text (NUL, invalid UTF-8) and text the
		// array literal must escape are stored, and do not block the flush.
		odd := `say "hi", {x} \ back` + "\x00\xff"
		r.Record(site.ID, b.ID, "10.0.0.3", odd, "https://r.example/?a={1,2}")
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var odds []models.ViewEvent
		if err := d.NewSelect().Model(&odds).Where("ip = '10.0.0.3'").Scan(ctx); err != nil || len(odds) != 1 {
			t.Fatalf("odd event: %v %+v", err, odds)
		}
		if want := `say "hi", {x} \ back` + "\uFFFD"; odds[0].UserAgent != want || odds[0].Referer != "https://r.example/?a={1,2}" {
			t.Fatalf("stored %q / %q", odds[0].UserAgent, odds[0].Referer)
		}
		if v := docViews(t, d, b.ID); v != 2 {
			t.Fatalf("views of b = %d, want 2", v)
		}
	})
}

func TestViewRecorderConcurrentAndClose(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "views")
		doc := docTestDocument(t, d, site, nil, "A", "x")
		r := db.NewViewRecorder(d, 15*time.Millisecond) // the background flusher runs meanwhile
		var wg sync.WaitGroup
		for g := 0; g < 20; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					r.Record(site.ID, doc.ID, "1.2.3.4", "ua", "")
					if i%10 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		wg.Wait()
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if v, n := docViews(t, d, doc.ID), docEvents(t, d, doc.ID); v != 1000 || n != 1000 {
			t.Fatalf("views %d events %d, want 1000 each", v, n)
		}
	})
}

func TestViewRecorderBackgroundFlush(t *testing.T) {
	d := dbtest.Open(t, "sqlite")
	site := docTestSite(t, d, "views")
	doc := docTestDocument(t, d, site, nil, "A", "x")
	r := db.NewViewRecorder(d, 10*time.Millisecond)
	defer r.Close(context.Background())
	r.Record(site.ID, doc.ID, "", "", "")
	deadline := time.Now().Add(5 * time.Second)
	for docViews(t, d, doc.ID) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("background flush did not write the view")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func collectionOrders(t *testing.T, d *db.DB, siteID int64, parent *int64) string {
	t.Helper()
	cols, _, err := d.ListCollections(context.Background(), siteID, parent, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, c := range cols {
		s += fmt.Sprintf("%s:%d ", c.Title, c.Order)
	}
	return s
}

func TestCollectionMoveRenumbersAndRefuses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "tree")
		other := docTestSite(t, d, "other")
		a := docTestCollection(t, d, site, nil, "A")
		b := docTestCollection(t, d, site, nil, "B")
		c := docTestCollection(t, d, site, nil, "C")
		a1 := docTestCollection(t, d, site, a, "A1")
		a2 := docTestCollection(t, d, site, a, "A2")
		a11 := docTestCollection(t, d, site, a1, "A11")
		foreign := docTestCollection(t, d, other, nil, "F")
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 C:2 " {
			t.Fatalf("roots: %s", got)
		}
		// C moves under A at position 1: A's children A1 C A2, roots A B.
		pos := 1
		moved, err := d.MoveCollection(ctx, c.ID, &a.ID, &pos)
		if err != nil {
			t.Fatal(err)
		}
		if moved.Order != 1 || *moved.ParentID != a.ID {
			t.Fatalf("moved: %+v", moved)
		}
		if got := collectionOrders(t, d, site.ID, &a.ID); got != "A1:0 C:1 A2:2 " {
			t.Fatalf("children of A: %s", got)
		}
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 " {
			t.Fatalf("roots: %s", got)
		}
		// A position past the end is clamped; nil parent is the root.
		pos = 99
		if _, err := d.MoveCollection(ctx, a2.ID, nil, &pos); err != nil {
			t.Fatal(err)
		}
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 A2:2 " {
			t.Fatalf("roots: %s", got)
		}
		pos = 0
		for _, tc := range []struct {
			id     int64
			parent int64
			want   error
		}{
			{a.ID, a.ID, db.ErrMoveIntoSelf},
			{a.ID, a11.ID, db.ErrMoveIntoSelf},
			{a.ID, foreign.ID, db.ErrParentOtherSite},
			{a.ID, 999999, db.ErrParentNotFound},
		} {
			if _, err := d.MoveCollection(ctx, tc.id, &tc.parent, &pos); !errors.Is(err, tc.want) {
				t.Fatalf("move %d under %d: %v, want %v", tc.id, tc.parent, err, tc.want)
			}
		}
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 A2:2 " {
			t.Fatalf("refused moves changed the roots: %s", got)
		}
		// Delete: refused with children or documents; allowed when empty.
		if err := d.DeleteCollection(ctx, a1.ID); !errors.Is(err, db.ErrCollectionNotEmpty) {
			t.Fatalf("delete with child: %v", err)
		}
		docTestDocument(t, d, site, b, "doc", "")
		if err := d.DeleteCollection(ctx, b.ID); !errors.Is(err, db.ErrCollectionNotEmpty) {
			t.Fatalf("delete with document: %v", err)
		}
		if err := d.DeleteCollection(ctx, a11.ID); err != nil {
			t.Fatal(err)
		}
		// Deleting renumbers the former siblings.
		if err := d.DeleteCollection(ctx, a1.ID); err != nil {
			t.Fatal(err)
		}
		if got := collectionOrders(t, d, site.ID, &a.ID); got != "C:0 " {
			t.Fatalf("children of A after delete: %s", got)
		}
		ids, err := d.CollectionWithDescendants(ctx, a.ID)
		if err != nil || len(ids) != 2 {
			t.Fatalf("descendants of A: %v %v", ids, err)
		}
	})
}

func TestListDocumentsKeywordAndVisibility(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "kw")
		hidden := docTestSite(t, d, "hidden")
		if _, err := d.NewUpdate().Model(hidden).Set("status = ?", models.SiteInactive).WherePK().Exec(ctx); err != nil {
			t.Fatal(err)
		}
		docTestDocument(t, d, site, nil, "100% 数据库 guide", "")
		docTestDocument(t, d, site, nil, "Plain", "about databases")
		docTestDocument(t, d, site, nil, "Under_score", "")
		docTestDocument(t, d, hidden, nil, "数据库 hidden", "")
		for kw, want := range map[string]int{"%": 1, "_": 1, "数据库": 2, "DATABASE": 1, "GUIDE": 1, "nothing": 0} {
			_, n, err := d.ListDocuments(ctx, db.DocumentFilter{Keyword: kw, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Fatalf("keyword %q: %d, want %d", kw, n, want)
			}
		}
		_, n, err := d.ListDocuments(ctx, db.DocumentFilter{Keyword: "数据库", Public: true, Limit: 10})
		if err != nil || n != 1 {
			t.Fatalf("public CJK: %d %v", n, err)
		}
		docs, _, err := d.ListDocuments(ctx, db.DocumentFilter{ExcludeContent: true, Keyword: "databases", Limit: 10})
		if err != nil || len(docs) != 1 || docs[0].Content != "" {
			t.Fatalf("exclude content: %+v %v", docs, err)
		}
		_, n, err = d.ListDocuments(ctx, db.DocumentFilter{CollectionIDs: []int64{}, Limit: 10})
		if err != nil || n != 0 {
			t.Fatalf("empty collection set: %d %v", n, err)
		}
	})
}

// TestListDocumentsKeywordShapes checks the keyword list on each dialect
// against a plain Go substring match: keywords with trigrams (PostgreSQL's
// index path), one and two characters (the scan path), other case (ILIKE),
// CJK (caseless: LIKE alone), matches in title, summary or content only,
// paging past the end, order_by and content in or out.
func TestListDocumentsKeywordShapes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "shapes")
		other := docTestSite(t, d, "shapes-other")
		type doc struct{ title, summary, content string }
		corpus := []doc{
			{"Lighthouse keeping", "", "how to keep a light"},
			{"Harbour", "the lighthouse at night", "boats"},
			{"Coast", "", "a LIGHTHOUSE and a 数据库 note"},
			{"Notes", "", "nothing to see"},
			{"数据库 guide", "", "tables and rows"},
			{"Mixed", "", "LightHouse in camel case; 100% sure_thing"},
			{"Draft lighthouse", "", "unpublished"},
		}
		var docs []*models.Document
		for i, c := range corpus {
			m := &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: c.title, Summary: c.summary,
				Content: c.content, Tags: "[]", Status: models.DocPublished, VectorStatus: models.VecNone, Views: int64(10 - i)}
			if c.title == "Draft lighthouse" {
				m.Status = models.DocDraft
			}
			if err := d.CreateDocument(ctx, m); err != nil {
				t.Fatal(err)
			}
			docs = append(docs, m)
		}
		docTestDocument(t, d, other, nil, "lighthouse elsewhere", "lighthouse")
		want := func(kw string) []int64 { // newest first, published only
			var ids []int64
			for i := len(docs) - 1; i >= 0; i-- {
				m := docs[i]
				hay := strings.ToLower(m.Title + "\x00" + m.Summary + "\x00" + m.Content)
				if m.Status == models.DocPublished && strings.Contains(hay, strings.ToLower(kw)) {
					ids = append(ids, m.ID)
				}
			}
			return ids
		}
		idsOf := func(ds []models.Document) []int64 {
			var ids []int64
			for _, m := range ds {
				ids = append(ids, m.ID)
			}
			return ids
		}
		for _, kw := range []string{"lighthouse", "LIGHTHOUSE", "LightHouse", "light", "ht", "h", "数据库", "数据", "库",
			"100%", "sure_thing", "_", "%", "nothing", "absent"} {
			f := db.DocumentFilter{Public: true, SiteID: site.ID, Keyword: kw, ExcludeContent: true, Limit: 3}
			got, total, err := d.ListDocuments(ctx, f)
			if err != nil {
				t.Fatalf("%q: %v", kw, err)
			}
			all := want(kw)
			page := all[:min(3, len(all))]
			if total != len(all) || !slices.Equal(idsOf(got), page) {
				t.Fatalf("keyword %q: ids %v total %d, want %v total %d", kw, idsOf(got), total, page, len(all))
			}
			for _, m := range got {
				if m.Content != "" {
					t.Fatalf("keyword %q: content not excluded", kw)
				}
			}
			// The next pages, and one past the end, keep the total.
			for off := 3; off <= len(all)+3; off += 3 {
				f.Offset = off
				got, total, err = d.ListDocuments(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				page := all[min(off, len(all)):min(off+3, len(all))]
				if total != len(all) || !slices.Equal(idsOf(got), page) {
					t.Fatalf("keyword %q offset %d: ids %v total %d, want %v total %d", kw, off, idsOf(got), total, page, len(all))
				}
			}
		}
		// order_by views ascending, with content.
		got, total, err := d.ListDocuments(ctx, db.DocumentFilter{Public: true, SiteID: site.ID, Keyword: "lighthouse",
			OrderBy: "views", OrderDir: "asc", Limit: 10})
		if err != nil || total != 4 || len(got) != 4 {
			t.Fatalf("order by views: %d %d %v", len(got), total, err)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].Views > got[i].Views {
				t.Fatalf("order by views asc: %v", idsOf(got))
			}
		}
		if got[0].Content == "" {
			t.Fatal("content missing when not excluded")
		}
		// The admin list: every status, several sites.
		_, total, err = d.ListDocuments(ctx, db.DocumentFilter{SiteIDs: []int64{site.ID, other.ID}, Keyword: "lighthouse", Limit: 10})
		if err != nil || total != 6 {
			t.Fatalf("admin list: %d %v", total, err)
		}
		if d.Postgres() {
			// ILIKE folds more than ASCII.
			m := docTestDocument(t, d, site, nil, "Obst", "ÄPFEL und Birnen")
			got, total, err := d.ListDocuments(ctx, db.DocumentFilter{SiteID: site.ID, Keyword: "äpfel", Limit: 10})
			if err != nil || total != 1 || got[0].ID != m.ID {
				t.Fatalf("non-ASCII case: %v %d %v", idsOf(got), total, err)
			}
		}
	})
}

// --- keyword list performance (PostgreSQL, opt-in) ---

// Words planted by loadKeywordCorpus: kwRare in 1% of the documents, kwCommon
// in about half, kwCJK in about 5% (and other CJK text in a fifth).
const (
	kwRare   = "quokkafrost"
	kwCommon = "lighthouse"
	kwCJK    = "数据库"
)

// keywordCorpusDoc returns the i-th generated document: about 4 KB of
// Markdown drawn from a skewed vocabulary, deterministic in i.
func keywordCorpusDoc(i int, vocab []string, cjk []string) (title, summary, content string) {
	rng := rand.New(rand.NewPCG(uint64(i), 0x9e3779b97f4a7c15))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	word := func() string { return vocab[zipf.Uint64()] }
	sentence := func() string {
		n := 6 + rng.IntN(14)
		ws := make([]string, n)
		for j := range ws {
			ws[j] = word()
		}
		return strings.ToUpper(ws[0][:1]) + strings.Join(ws, " ")[1:] + "."
	}
	tw := make([]string, 3+rng.IntN(4))
	for j := range tw {
		tw[j] = word()
	}
	title = strings.Join(tw, " ")
	summary = sentence() + " " + sentence()
	var b strings.Builder
	for b.Len() < 4096 {
		switch rng.IntN(8) {
		case 0:
			b.WriteString("## " + sentence() + "\n\n")
		case 1:
			b.WriteString("- " + sentence() + "\n- " + sentence() + "\n\n")
		case 2:
			b.WriteString("```\n" + word() + " --" + word() + "=" + word() + "\n```\n\n")
		default:
			for range 2 + rng.IntN(4) {
				b.WriteString(sentence() + " ")
			}
			b.WriteString("\n\n")
		}
	}
	content = b.String()
	plant := func(w string) {
		at := rng.IntN(len(content) - 1)
		for at > 0 && content[at] != ' ' {
			at--
		}
		content = content[:at] + " " + w + content[at:]
	}
	if i%5 == 0 {
		var z strings.Builder
		for range 40 + rng.IntN(60) {
			z.WriteString(cjk[rng.IntN(len(cjk))])
		}
		content += "\n\n" + z.String() + "。\n"
	}
	if i%20 == 3 {
		plant(kwCJK)
	}
	if i%100 == 7 {
		plant(kwRare)
	}
	if rng.IntN(2) == 0 {
		plant(kwCommon)
	}
	return title, summary, content
}

func keywordVocab() []string {
	base := strings.Fields(`the of and to in is for that on with as by this are be it from or an at can not
you your we will all when which use one if has more also each its after only before must other new should
value file request response server client data user page site document search index query result error
config option default time timeout limit size version update create delete list read write start stop run
process service cache memory disk network port address host path name key token session message event
stream buffer queue worker job task retry backoff policy schema table column row field type string number`)
	syl := strings.Fields(`ka lo ri ven tor mal dex sen qua ber lin tra vos mir pel dor gan fis hel zur
bra cin dal eph gor hum ix jel kor lum myr nex orb pra quen ros sil tev ulm vor wex yor zan ath bel cor dun`)
	rng := rand.New(rand.NewPCG(42, 43))
	seen := map[string]bool{}
	for _, w := range base {
		seen[w] = true
	}
	for len(base) < 5000 {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		w := b.String()
		if seen[w] || strings.Contains(w, kwRare) || strings.Contains(kwCommon, w) || strings.Contains(w, kwCommon) {
			continue
		}
		seen[w] = true
		base = append(base, w)
	}
	return base
}

// loadKeywordCorpus inserts n published documents into site (skipped when
// the site already has them) and runs VACUUM ANALYZE.
func loadKeywordCorpus(t testing.TB, d *db.DB, site *models.Site, n int) {
	t.Helper()
	ctx := context.Background()
	have64, err := d.NewSelect().Model((*models.Document)(nil)).Where("site_id = ?", site.ID).Count(ctx)
	have := int(have64)
	if err != nil {
		t.Fatal(err)
	}
	if have < n {
		vocab := keywordVocab()
		cjk := strings.Split("数据服务器索引查询文档用户配置缓存网络消息任务版本更新创建删除列表读取写入开始停止运行进程会话令牌", "")
		now := time.Now().UTC().Add(-time.Duration(n) * time.Minute)
		for start := have; start < n; start += 500 {
			var batch []models.Document
			for i := start; i < min(start+500, n); i++ {
				title, summary, content := keywordCorpusDoc(i, vocab, cjk)
				at := now.Add(time.Duration(i) * time.Minute)
				batch = append(batch, models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: title,
					Summary: summary, Content: content, Tags: "[]", Status: models.DocPublished,
					VectorStatus: models.VecNone, ContentVersion: 1, CreatedAt: at, UpdatedAt: at})
			}
			if _, err := d.NewInsert().Model(&batch).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d.Postgres() {
		if _, err := d.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
			t.Fatal(err)
		}
	}
}

// sqlRecorder is a bun query hook that keeps the SQL of the queries it sees.
type sqlRecorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *sqlRecorder) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (r *sqlRecorder) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	r.mu.Lock()
	r.sql = append(r.sql, e.Query)
	r.mu.Unlock()
}

// explainedQuery is a recorded SELECT with its plan and the SET LOCAL
// statements that came before it in its transaction.
type explainedQuery struct {
	set       []string
	sql, plan string
}

// explain runs each SELECT the recorder saw with the explain prefix, after
// the SET LOCAL statements recorded before it, and clears the recorder.
func (r *sqlRecorder) explain(t *testing.T, d *db.DB, prefix string) []explainedQuery {
	t.Helper()
	r.mu.Lock()
	queries := slices.Clone(r.sql)
	r.sql = nil
	r.mu.Unlock()
	var set []string // SET LOCAL statements of the list's transaction
	var out []explainedQuery
	for _, q := range queries {
		if strings.HasPrefix(q, "SET LOCAL") {
			set = append(set, q)
		}
		if !strings.HasPrefix(q, "SELECT") && !strings.HasPrefix(q, "WITH") {
			continue
		}
		var plan []string
		err := d.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
			for _, s := range set {
				if _, err := tx.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return tx.NewRaw(prefix+" "+q).Scan(ctx, &plan)
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, explainedQuery{slices.Clone(set), q, strings.Join(plan, "\n")})
	}
	return out
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// TestKeywordListPerf loads 10,000 ~4 KB published documents into one site on
// PostgreSQL, prints the plans of the SQL the client keyword list runs, and
// measures it one query at a time and from 32 goroutines. Opt-in:
// LORE_KEYWORD_PERF=1 (LORE_KEYWORD_DSN reuses a database, loaded once).
func TestKeywordListPerf(t *testing.T) {
	if os.Getenv("LORE_KEYWORD_PERF") == "" {
		t.Skip("set LORE_KEYWORD_PERF=1 to run")
	}
	ctx := context.Background()
	var d *db.DB
	if dsn := os.Getenv("LORE_KEYWORD_DSN"); dsn != "" {
		var err error
		if d, err = db.Open(ctx, dsn); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	} else {
		d = dbtest.Open(t, "postgres")
	}
	site := new(models.Site)
	if err := d.NewSelect().Model(site).Where("slug = ?", "perf").Scan(ctx); err != nil {
		site = docTestSite(t, d, "perf")
	}
	n := 10000
	if s := os.Getenv("LORE_KEYWORD_DOCS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	loadKeywordCorpus(t, d, site, n)
	if os.Getenv("LORE_KEYWORD_CHURN") != "" {
		// What view count flushes leave behind: a third of the rows updated
		// (every index entry rewritten, the GIN pending lists full), analyzed
		// but not vacuumed yet.
		start := time.Now()
		if _, err := d.ExecContext(ctx, "UPDATE documents SET views = views + 1 WHERE id % 3 = 0"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ExecContext(ctx, "ANALYZE documents"); err != nil {
			t.Fatal(err)
		}
		t.Logf("churn: a third of the documents updated in %s", time.Since(start).Round(time.Millisecond))
	}

	filter := func(kw string) db.DocumentFilter {
		// What the client list handler passes for ?site_id&keyword&size=10.
		return db.DocumentFilter{Public: true, SiteID: site.ID, Keyword: kw, ExcludeContent: true, Limit: 10}
	}
	rec := &sqlRecorder{}
	d.DB = d.WithQueryHook(rec)
	for _, kw := range []string{kwRare, kwCommon, kwCJK, "db", "q"} {
		rec.mu.Lock()
		rec.sql = nil
		rec.mu.Unlock()
		docs, total, err := d.ListDocuments(ctx, filter(kw))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("keyword %q: %d rows, total %d", kw, len(docs), total)
		if os.Getenv("LORE_KEYWORD_EXPLAIN") == "" {
			continue
		}
		for _, e := range rec.explain(t, d, "EXPLAIN (ANALYZE, BUFFERS)") {
			t.Logf("%s\n%s\n%s", strings.Join(e.set, "; "), e.sql, e.plan)
		}
	}
	runs := 30
	for _, kw := range []string{kwRare, kwCommon, kwCJK, "db"} {
		var ds []time.Duration
		for range runs {
			start := time.Now()
			if _, _, err := d.ListDocuments(ctx, filter(kw)); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		t.Logf("sequential %-12q p50 %6.2f ms  p99 %6.2f ms (%d runs)", kw,
			ms(percentile(ds, .5)), ms(percentile(ds, .99)), runs)
	}
	dur := 10 * time.Second
	if s := os.Getenv("LORE_KEYWORD_DURATION"); s != "" {
		dur, _ = time.ParseDuration(s)
	}
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	deadline := time.Now().Add(dur)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				start := time.Now()
				if _, _, err := d.ListDocuments(ctx, filter(kwRare)); err != nil {
					t.Error(err)
					return
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("32 goroutines %q for %s: %d calls (%.0f/s), p50 %.2f ms, p99 %.2f ms", kwRare, dur, len(all),
		float64(len(all))/dur.Seconds(), ms(percentile(all, .5)), ms(percentile(all, .99)))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
