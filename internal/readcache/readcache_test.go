package readcache

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache/memory"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

type doc struct {
	id    int64
	views int64
	body  string
}

func docSize(d doc) int { return 100 + len(d.body) }

func TestDetailsBoundsGenerationsAndExpiry(t *testing.T) {
	c := NewDetails(time.Hour, 32*1024, docSize)
	body := string(make([]byte, 400))
	if _, hit, _ := c.Get(1); hit {
		t.Fatal("hit on an empty cache")
	}
	_, _, gen := c.Get(1)
	c.Put(gen, 1, doc{id: 1, body: body})
	if d, hit, _ := c.Get(1); !hit || d.id != 1 {
		t.Fatal("miss after put")
	}
	// Replacing an entry does not count it twice.
	_, _, gen = c.Get(1)
	c.Put(gen, 1, doc{id: 1, body: body})
	if c.Bytes() != 500 || c.Len() != 1 {
		t.Fatalf("after a replace: %d bytes, %d entries", c.Bytes(), c.Len())
	}
	// A fill that started before an invalidation is not stored.
	_, _, gen = c.Get(2)
	c.Forget(99)
	c.Put(gen, 2, doc{id: 2, body: body})
	if _, hit, _ := c.Get(2); hit {
		t.Fatal("a stale fill was stored")
	}
	// Views are updated in place, and a fill from before is dropped.
	_, _, gen = c.Get(3)
	c.Update([]int64{1, 42}, func(id int64, d *doc) { d.views += 5 })
	if d, _, _ := c.Get(1); d.views != 5 {
		t.Fatalf("views after update: %d", d.views)
	}
	c.Put(gen, 3, doc{id: 3})
	if _, hit, _ := c.Get(3); hit {
		t.Fatal("a fill from before the update was stored")
	}
	// Too large for the bound: not kept.
	_, _, gen = c.Get(4)
	c.Put(gen, 4, doc{id: 4, body: string(make([]byte, 32*1024/16))})
	if _, hit, _ := c.Get(4); hit {
		t.Fatal("an oversized detail was kept")
	}
	// The byte bound evicts the least recently used entries.
	for id := int64(10); id < 100; id++ {
		_, _, g := c.Get(id)
		c.Put(g, id, doc{id: id, body: body})
	}
	if c.Bytes() > 32*1024 || c.Len() >= 90 {
		t.Fatalf("%d bytes of %d, %d entries", c.Bytes(), 32*1024, c.Len())
	}
	if _, hit, _ := c.Get(99); !hit {
		t.Fatal("the newest entry was evicted")
	}
	c.Clear()
	if _, hit, _ := c.Get(99); hit || c.Bytes() != 0 {
		t.Fatal("clear left entries")
	}
	// Expired entries are misses, and leave the byte count.
	c = NewDetails(50*time.Millisecond, 1<<20, docSize)
	_, _, gen = c.Get(1)
	c.Put(gen, 1, doc{id: 1})
	time.Sleep(100 * time.Millisecond)
	if _, hit, _ := c.Get(1); hit {
		t.Fatal("an expired entry was served")
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.Bytes() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.Bytes() != 0 {
		t.Fatalf("%d bytes still counted after expiry", c.Bytes())
	}
}

// Changed drops exactly what a write made stale.
func TestChangedDropsWhatTheWriteTouched(t *testing.T) {
	ctx := context.Background()
	shared := memory.New(100)
	c := New[doc](nil, shared, slog.New(slog.DiscardHandler), docSize)
	c.redelete = time.Millisecond
	fill := func() {
		for _, id := range []int64{1, 2} {
			_, _, g := c.Details.Get(id)
			c.Details.Put(g, id, doc{id: id})
		}
		_, _, lg := c.Lists.Get("q")
		c.Lists.Put(lg, "q", []byte("list"))
		if _, err := c.SiteRows.Get(7, func() (*models.Site, error) { return &models.Site{ID: 7}, nil }); err != nil {
			t.Fatal(err)
		}
		for _, k := range SiteKeys(&models.Site{ID: 7, Slug: "old"}) {
			c.PutSiteBody(ctx, k, []byte("body"), time.Hour, c.SiteEpoch())
		}
	}
	has := func(key string) bool { _, hit := c.SiteBody(ctx, key); return hit }
	rowLoads := 0
	rowCached := func() bool {
		_, _ = c.SiteRows.Get(7, func() (*models.Site, error) { rowLoads++; return &models.Site{ID: 7}, nil })
		return rowLoads == 0
	}

	fill()
	c.Changed(ctx, db.Change{Documents: []int64{1}})
	if _, hit, _ := c.Details.Get(1); hit {
		t.Fatal("the written document stayed")
	}
	if _, hit, _ := c.Details.Get(2); !hit {
		t.Fatal("another document was dropped")
	}
	if _, hit, _ := c.Lists.Get("q"); hit {
		t.Fatal("lists stayed after a document write")
	}
	if !has(SiteKey("slug", "old", "Success")) || !rowCached() {
		t.Fatal("a document write dropped site entries")
	}

	fill()
	c.Changed(ctx, db.Change{AllDocuments: true})
	if _, hit, _ := c.Details.Get(2); hit {
		t.Fatal("AllDocuments left a detail")
	}

	fill()
	epoch := c.SiteEpoch()
	c.Changed(ctx, db.Change{Sites: []*models.Site{{ID: 7, Slug: "old"}, {ID: 7, Slug: "new"}}})
	for _, k := range SiteKeys(&models.Site{ID: 7, Slug: "old"}) {
		if has(k) {
			t.Fatalf("site body %s stayed", k)
		}
	}
	if _, hit, _ := c.Lists.Get("q"); hit {
		t.Fatal("lists stayed after a site write")
	}
	if rowCached() {
		t.Fatal("the site row stayed")
	}
	// A reader that loaded the site before the write does not store it.
	c.PutSiteBody(ctx, SiteKey("id", "7", "Success"), []byte("stale"), time.Hour, epoch)
	if has(SiteKey("id", "7", "Success")) {
		t.Fatal("a body read before the write was stored")
	}
	if _, hit, _ := c.Details.Get(2); !hit {
		t.Fatal("a site write dropped document details")
	}
}

// A list read before a purge is not stored after it.
func TestListsDropAFillThatRacedAPurge(t *testing.T) {
	l := NewLists(8, time.Minute)
	_, hit, gen := l.Get("q")
	if hit {
		t.Fatal("hit in an empty cache")
	}
	l.Purge() // a write committed while the fill read the database
	l.Put(gen, "q", []byte("stale"))
	if _, hit, _ := l.Get("q"); hit {
		t.Fatal("a fill that raced a purge was kept")
	}
	_, _, gen = l.Get("q")
	l.Put(gen, "q", []byte("fresh"))
	if b, hit, _ := l.Get("q"); !hit || string(b) != "fresh" {
		t.Fatalf("a fill after the purge: %q %v", b, hit)
	}
}
