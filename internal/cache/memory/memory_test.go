package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache/cachetest"
	"github.com/lorekb/lore/internal/cache/memory"
)

func TestSuite(t *testing.T) {
	cachetest.Run(t, memory.New(1000))
}

func TestLRUEviction(t *testing.T) {
	ctx := context.Background()
	c := memory.New(3)
	for _, k := range []string{"a", "b", "c"} {
		c.Set(ctx, k, []byte(k), 0)
	}
	c.Get(ctx, "a") // a is now most recently used; b is the oldest
	c.Set(ctx, "d", []byte("d"), 0)
	if _, ok, _ := c.Get(ctx, "b"); ok {
		t.Error("least recently used entry b survived eviction")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok, _ := c.Get(ctx, k); !ok {
			t.Errorf("entry %s evicted, want it kept", k)
		}
	}
	st, _ := c.Stats(ctx)
	if st.Size != 3 || st.MaxSize != 3 || st.Backend != "memory" {
		t.Errorf("stats = %+v", st)
	}
}

func TestDefaultSize(t *testing.T) {
	st, _ := memory.New(0).Stats(context.Background())
	if st.MaxSize != memory.DefaultMaxSize {
		t.Errorf("New(0) max size = %d, want %d", st.MaxSize, memory.DefaultMaxSize)
	}
}

func TestExpiredEntryRemovedOnGet(t *testing.T) {
	ctx := context.Background()
	c := memory.New(10)
	c.Set(ctx, "k", []byte("v"), 20*time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	if _, ok, _ := c.Get(ctx, "k"); ok {
		t.Fatal("expired entry returned")
	}
	// Setting it again works and the entry is fresh.
	c.Set(ctx, "k", []byte("v2"), time.Minute)
	if v, ok, _ := c.Get(ctx, "k"); !ok || string(v) != "v2" {
		t.Fatalf("Get after re-Set = %q, %v", v, ok)
	}
}

// BenchmarkGetHit measures the hot path of the cached site detail endpoint.
func BenchmarkGetHit(b *testing.B) {
	ctx := context.Background()
	c := memory.New(10000)
	val := make([]byte, 4096)
	for i := range 1000 {
		c.Set(ctx, fmt.Sprintf("site:%d", i), val, time.Hour)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok, _ := c.Get(ctx, "site:42"); !ok {
				b.Fatal("miss")
			}
		}
	})
}
