package db_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// BenchmarkUpdateDocumentRevision measures what storing a revision adds to
// a document update that changes the content (a 4 KB Markdown page), on
// each dialect. Each iteration makes one update without the revision and
// one with it, back to back, so a loaded machine slows both alike; it
// reports the median of each (ns/update) and their ratio (with/without):
//
//	go test -run '^$' -bench UpdateDocumentRevision -benchtime 400x ./internal/db/
func BenchmarkUpdateDocumentRevision(b *testing.B) {
	page := strings.Repeat("## Section\n\nA paragraph of the page that explains one step of the procedure in words.\n\n", 45)
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			d := dbtest.Open(b, dialect)
			ctx := context.Background()
			tid, err := d.EnsureDefaultTenant(ctx)
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now().UTC()
			site := &models.Site{TenantID: tid, Name: "bench", Slug: "bench", Status: models.SiteActive, ThemeColor: "blue",
				LayoutMode: "sidebar", QuickQuestions: "[]", BotConfig: "{}", IsPublic: true, CreatedAt: now, UpdatedAt: now}
			if _, err := d.NewInsert().Model(site).Exec(ctx); err != nil {
				b.Fatal(err)
			}
			doc := &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: "Bench", Content: page,
				Tags: "[]", Status: models.DocPublished, VectorStatus: models.VecNone}
			if err := d.CreateDocument(ctx, doc); err != nil {
				b.Fatal(err)
			}
			defer d.SetRevisionsOff(false)
			update := func(off bool, i int) time.Duration {
				d.SetRevisionsOff(off)
				content := fmt.Sprintf("%s\n\nEdit %v %d.", page, off, i)
				start := time.Now()
				if _, _, err := d.UpdateDocument(ctx, doc.ID, func(doc *models.Document) error {
					doc.Content = content
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			var without, with []time.Duration
			for i := 0; b.Loop(); i++ {
				// Alternate which goes first, so neither always follows the other's commit.
				if i%2 == 0 {
					without = append(without, update(true, i))
					with = append(with, update(false, i))
				} else {
					with = append(with, update(false, i))
					without = append(without, update(true, i))
				}
			}
			mw, mo := median(with), median(without)
			b.ReportMetric(float64(mo.Nanoseconds()), "ns/update-without")
			b.ReportMetric(float64(mw.Nanoseconds()), "ns/update-with")
			b.ReportMetric(float64(mw)/float64(mo), "with/without")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
