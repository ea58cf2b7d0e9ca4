package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
)

// TestRevisionCostOfAnUpdate measures PUT /documents/{id} changing the
// content of a 4 KB page with and without the revision it stores, side by
// side on each dialect: each round makes one update of each kind back to
// back (alternating which goes first, so a loaded machine slows both alike),
// and the medians are compared. The target is at most 10% more; the test
// logs the figures and fails past 50%, a bound a loaded machine's noise
// stays under and a revision written the slow way (a statement parsed with
// its text, a round trip of its own) does not.
func TestRevisionCostOfAnUpdate(t *testing.T) {
	page := strings.Repeat("## Section\n\nA paragraph of the page that explains one step of the procedure in words.\n\n", 45)
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Cost")
		doc := kbDocument(h, map[string]any{"title": "Cost", "site_id": site.ID, "content": page})
		path := fmt.Sprintf("%s/documents/%d", adminPath, doc.ID)
		defer db.SetRevisionsOff(false)
		put := func(off bool, i int) time.Duration {
			db.SetRevisionsOff(off)
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
		t.Logf("PUT /documents/{id}, 4 KB content: median %v without a revision, %v with (%+.1f%%)", mo, mw, (ratio-1)*100)
		if ratio > 1.5 {
			t.Fatalf("storing a revision made an update %.0f%% slower (median %v → %v)", (ratio-1)*100, mo, mw)
		}
	})
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
