package api

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRevisionCostOfAnUpdate measures PUT /documents/{id} changing the
// content of a 4 KB page with and without the revision it stores, side by
// side on each dialect: each round makes one update of each kind back to
// back (alternating which goes first, so a loaded machine slows both alike),
// and the medians are compared, with the target line (at most 10% more).
// It is a measurement, run by make bench (LORE_MEASURE_REVISIONS=1).
func TestRevisionCostOfAnUpdate(t *testing.T) {
	if os.Getenv("LORE_MEASURE_REVISIONS") == "" {
		t.Skip("a measurement: make bench runs it (LORE_MEASURE_REVISIONS=1)")
	}
	page := strings.Repeat("## Section\n\nA paragraph of the page that explains one step of the procedure in words.\n\n", 45)
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Cost")
		doc := kbDocument(h, map[string]any{"title": "Cost", "site_id": site.ID, "content": page})
		path := fmt.Sprintf("%s/documents/%d", adminPath, doc.ID)
		defer h.d.DB.SetRevisionsOff(false)
		put := func(off bool, i int) time.Duration {
			h.d.DB.SetRevisionsOff(off)
			start := time.Now()
			h.must(200, "PUT", path, map[string]any{"content": fmt.Sprintf("%s\n\nEdit %v %d.", page, off, i)}, h.admin)
			return time.Since(start)
		}
		for i := 0; i < 20; i++ { // warm up
			put(i%2 == 0, -i)
		}
		var without, with []time.Duration
		for i := 0; i < 200; i++ {
			if i%2 == 0 {
				without, with = append(without, put(true, i)), append(with, put(false, i))
			} else {
				with, without = append(with, put(false, i)), append(without, put(true, i))
			}
		}
		mo, mw := medianOf(without), medianOf(with)
		ratio := float64(mw) / float64(mo)
		fmt.Printf("PUT /documents/{id}, 4 KB content, %s: median %v without a revision, %v with (%+.1f%%)\n", dialectOf(h), mo, mw, (ratio-1)*100)
		verdict := "PASS"
		if ratio > 1.1 {
			verdict = "MISS"
		}
		fmt.Printf("TARGET revision-update-cost-%s: %+.1f%% (≤ +10%%) %s\n", dialectOf(h), (ratio-1)*100, verdict)
	})
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func dialectOf(h *harness) string {
	if h.d.DB.Postgres() {
		return "postgres"
	}
	return "sqlite"
}
