// Package cachetest is the shared behaviour suite for cache.Cache
// implementations, so the in-memory and Redis backends are interchangeable.
// It runs against real backends only.
package cachetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache"
)

// Run exercises c. It calls Clear between sub-tests, so c must be dedicated
// to the test (for shared backends: a unique namespace). The suite needs c to
// hold at least 100 entries.
func Run(t *testing.T, c cache.Cache) {
	t.Helper()
	t.Run("Miss", func(t *testing.T) { testMiss(t, c) })
	t.Run("SetGet", func(t *testing.T) { testSetGet(t, c) })
	t.Run("TTL", func(t *testing.T) { testTTL(t, c) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, c) })
	t.Run("Clear", func(t *testing.T) { testClear(t, c) })
	t.Run("Stats", func(t *testing.T) { testStats(t, c) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, c) })
	t.Run("Counter", func(t *testing.T) { testCounter(t, c) })
}

// testCounter: parallel increments each see a distinct value (rate limits
// reserve attempts with them), a counter lives its ttl from creation, Extend
// lengthens it, Delete resets it.
func testCounter(t *testing.T, c cache.Cache) {
	ctr, ok := c.(cache.Counter)
	if !ok {
		t.Fatalf("%T does not implement cache.Counter", c)
	}
	ctx := ctxT(t)
	clearCache(t, c)
	const n = 200
	seen := make([]int, n+1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, left, err := ctr.Incr(ctx, "ctr", 1, time.Minute)
			if err != nil || v < 1 || v > n || left <= 0 || left > time.Minute {
				t.Errorf("incr: %d %s %v", v, left, err)
				return
			}
			mu.Lock()
			seen[v]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	for v := 1; v <= n; v++ {
		if seen[v] != 1 {
			t.Fatalf("value %d seen %d times", v, seen[v])
		}
	}
	if v, _, _ := ctr.Incr(ctx, "ctr", -1, time.Minute); v != n-1 {
		t.Fatalf("decrement: %d", v)
	}
	if err := c.Delete(ctx, "ctr"); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := ctr.Incr(ctx, "ctr", 1, time.Minute); v != 1 {
		t.Fatalf("after delete: %d", v)
	}
	// Expiry restarts the count; Extend lengthens a live counter only.
	if _, _, err := ctr.Incr(ctx, "short", 5, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := ctr.Extend(ctx, "short", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := ctr.Extend(ctx, "missing", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ctr.Incr(ctx, "expiring", 5, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if v, left, _ := ctr.Incr(ctx, "short", 1, time.Second); v != 6 || left < 5*time.Second {
		t.Fatalf("extended counter: %d, %s left", v, left)
	}
	if v, left, _ := ctr.Incr(ctx, "expiring", 1, time.Second); v != 1 || left > time.Second {
		t.Fatalf("expired counter: %d, %s left", v, left)
	}
	if v, _, _ := ctr.Incr(ctx, "missing", 1, time.Second); v != 1 {
		t.Fatalf("Extend created a key: %d", v)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func clearCache(t *testing.T, c cache.Cache) {
	t.Helper()
	if err := c.Clear(ctxT(t)); err != nil {
		t.Fatalf("Clear: %v", err)
	}
}

func mustGet(t *testing.T, c cache.Cache, key string) ([]byte, bool) {
	t.Helper()
	v, ok, err := c.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !ok && v != nil {
		t.Errorf("Get(%q) miss returned non-nil value %q", key, v)
	}
	return v, ok
}

func mustSet(t *testing.T, c cache.Cache, key string, val []byte, ttl time.Duration) {
	t.Helper()
	if err := c.Set(ctxT(t), key, val, ttl); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

func expect(t *testing.T, c cache.Cache, key string, want []byte) {
	t.Helper()
	got, ok := mustGet(t, c, key)
	if !ok {
		t.Fatalf("Get(%q) missed, want %q", key, want)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %q, want %q", key, got, want)
	}
}

func expectMiss(t *testing.T, c cache.Cache, key string) {
	t.Helper()
	if got, ok := mustGet(t, c, key); ok {
		t.Fatalf("Get(%q) = %q, want a miss", key, got)
	}
}

func stats(t *testing.T, c cache.Cache) cache.Stats {
	t.Helper()
	st, err := c.Stats(ctxT(t))
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

func testMiss(t *testing.T, c cache.Cache) {
	clearCache(t, c)
	expectMiss(t, c, "never-set")
}

func testSetGet(t *testing.T, c cache.Cache) {
	clearCache(t, c)
	mustSet(t, c, "site:1", []byte(`{"id":1,"name":"Lore"}`), 0)
	expect(t, c, "site:1", []byte(`{"id":1,"name":"Lore"}`))

	binary := []byte{0, 1, 2, 0xff, 0xfe, 0, '\n', '\r'}
	mustSet(t, c, "binary", binary, time.Minute)
	expect(t, c, "binary", binary)

	// An empty value is a hit, distinct from a miss.
	mustSet(t, c, "empty", []byte{}, time.Minute)
	if v, ok := mustGet(t, c, "empty"); !ok || len(v) != 0 {
		t.Fatalf("Get(empty) = %q, %v; want an empty hit", v, ok)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	mustSet(t, c, "big", big, time.Minute)
	expect(t, c, "big", big)

	mustSet(t, c, "site:1", []byte("v2"), 0)
	expect(t, c, "site:1", []byte("v2"))

	// Keys with separators, spaces, Unicode and glob characters are
	// ordinary keys.
	for _, k := range []string{"a:b:c", "with space", "ключ/日本", "glob*?[x]\\", ""} {
		mustSet(t, c, k, []byte("v:"+k), time.Minute)
		expect(t, c, k, []byte("v:"+k))
	}

	// The caller may reuse its buffer after Set.
	buf := []byte("original")
	mustSet(t, c, "reuse", buf, 0)
	copy(buf, "CHANGED!")
	expect(t, c, "reuse", []byte("original"))
}

func testTTL(t *testing.T, c cache.Cache) {
	clearCache(t, c)
	const ttl = time.Second
	start := time.Now()
	mustSet(t, c, "short", []byte("x"), ttl)
	mustSet(t, c, "forever", []byte("y"), 0)
	mustSet(t, c, "negative", []byte("z"), -time.Second) // <= 0: no expiry
	if _, ok := mustGet(t, c, "short"); !ok && time.Since(start) < ttl {
		t.Fatalf("entry with %v TTL missing after %v", ttl, time.Since(start))
	}
	before := stats(t, c).Misses
	time.Sleep(ttl + 500*time.Millisecond)
	expectMiss(t, c, "short")
	if after := stats(t, c).Misses; after != before+1 {
		t.Errorf("expired Get counted %d misses, want 1", after-before)
	}
	expect(t, c, "forever", []byte("y"))
	expect(t, c, "negative", []byte("z"))
	if st := stats(t, c); st.Size != 2 {
		t.Errorf("Stats.Size = %d after expiry, want 2 (expired entries are gone)", st.Size)
	}
	// Re-setting an entry renews its TTL.
	mustSet(t, c, "renew", []byte("1"), ttl)
	time.Sleep(ttl / 2)
	mustSet(t, c, "renew", []byte("2"), 3*ttl)
	time.Sleep(ttl)
	expect(t, c, "renew", []byte("2"))
}

func testDelete(t *testing.T, c cache.Cache) {
	clearCache(t, c)
	for _, k := range []string{"a", "b", "c"} {
		mustSet(t, c, k, []byte(k), time.Minute)
	}
	if err := c.Delete(ctxT(t), "a", "b", "missing"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	expectMiss(t, c, "a")
	expectMiss(t, c, "b")
	expect(t, c, "c", []byte("c"))
	if err := c.Delete(ctxT(t)); err != nil {
		t.Fatalf("Delete with no keys: %v", err)
	}
	if err := c.Delete(ctxT(t), "missing"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	expect(t, c, "c", []byte("c"))
}

func testClear(t *testing.T, c cache.Cache) {
	clearCache(t, c)
	for i := range 50 {
		mustSet(t, c, fmt.Sprintf("k%d", i), []byte("v"), time.Minute)
	}
	expect(t, c, "k1", []byte("v"))
	expectMiss(t, c, "nope")
	if st := stats(t, c); st.Size != 50 || st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("before Clear: %+v, want size 50, 1 hit, 1 miss", st)
	}
	clearCache(t, c)
	st := stats(t, c)
	if st.Size != 0 || st.Hits != 0 || st.Misses != 0 || st.HitRate != "0.00%" {
		t.Fatalf("after Clear: %+v, want empty cache and reset counters", st)
	}
	for i := range 50 {
		expectMiss(t, c, fmt.Sprintf("k%d", i))
	}
	// The cache is usable after Clear.
	mustSet(t, c, "again", []byte("ok"), 0)
	expect(t, c, "again", []byte("ok"))
}

func testStats(t *testing.T, c cache.Cache) {
	clearCache(t, c)
	st := stats(t, c)
	if st.Backend == "" || st.HitRate != "0.00%" || st.Hits != 0 || st.Misses != 0 || st.Size != 0 {
		t.Fatalf("fresh stats = %+v", st)
	}
	for _, k := range []string{"x", "y", "z"} {
		mustSet(t, c, k, []byte(k), time.Minute)
	}
	expect(t, c, "x", []byte("x"))
	expect(t, c, "y", []byte("y"))
	expect(t, c, "x", []byte("x"))
	expectMiss(t, c, "w")
	st = stats(t, c)
	if st.Size != 3 || st.Hits != 3 || st.Misses != 1 || st.HitRate != "75.00%" {
		t.Fatalf("stats = %+v, want size 3, 3 hits, 1 miss, 75.00%%", st)
	}
	expectMiss(t, c, "w")
	expectMiss(t, c, "v")
	expectMiss(t, c, "u")
	expectMiss(t, c, "t")
	expectMiss(t, c, "s")
	if st = stats(t, c); st.HitRate != "33.33%" {
		t.Fatalf("hit rate with 3 hits / 6 misses = %q, want 33.33%%", st.HitRate)
	}
	// Stats is a read: it changes no counters.
	if again := stats(t, c); again.Hits != st.Hits || again.Misses != st.Misses {
		t.Fatalf("Stats changed counters: %+v then %+v", st, again)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"backend", "size", "hits", "misses", "hit_rate"} {
		if _, ok := m[k]; !ok {
			t.Errorf("Stats JSON %s lacks %q", raw, k)
		}
	}
}

func testConcurrent(t *testing.T, c cache.Cache) {
	clearCache(t, c)
	const workers, ops = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range ops {
				k := fmt.Sprintf("c%d", (w*7+i)%40)
				val := []byte(k)
				if i%3 == 0 {
					if err := c.Set(ctx, k, val, time.Minute); err != nil {
						errs <- err
						return
					}
				}
				got, ok, err := c.Get(ctx, k)
				if err != nil {
					errs <- err
					return
				}
				if ok && !bytes.Equal(got, val) {
					errs <- fmt.Errorf("Get(%q) = %q", k, got)
					return
				}
				if i%17 == 0 {
					if err := c.Delete(ctx, k); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := stats(t, c); st.Hits+st.Misses != workers*ops {
		t.Fatalf("hits %d + misses %d != %d Gets: counters lost updates", st.Hits, st.Misses, workers*ops)
	}
}
