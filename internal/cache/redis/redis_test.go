package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lorekb/lore/internal/cache/cachetest"
	"github.com/lorekb/lore/internal/cache/redis"
)

func redisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// client connects to the real Redis server and fails the test (never skips)
// when it is unreachable.
func client(t *testing.T) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(redisURL())
	if err != nil {
		t.Fatalf("bad REDIS_URL %q: %v", redisURL(), err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s is not reachable (%v): start redis-server on 127.0.0.1:6379 or set REDIS_URL", redisURL(), err)
	}
	return c
}

// uniquePrefix gives each run its own namespace and removes whatever is left
// in it afterwards.
func uniquePrefix(t *testing.T, c *goredis.Client) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	prefix := "lore-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return prefix
}

func TestSuite(t *testing.T) {
	c := client(t)
	cachetest.Run(t, redis.New(c, uniquePrefix(t, c)))
}

func TestKeysAreNamespaced(t *testing.T) {
	ctx := context.Background()
	c := client(t)
	prefix := uniquePrefix(t, c)
	cc := redis.New(c, prefix)
	if err := cc.Set(ctx, "site:1", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, prefix+"site:1").Result(); err != nil || got != "v" {
		t.Fatalf("raw key %q = %q, %v", prefix+"site:1", got, err)
	}
	if ttl := c.TTL(ctx, prefix+"site:1").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("server-side TTL = %v, want (0, 1m]", ttl)
	}

	// Keys outside the namespace, including ones that share the prefix as
	// a glob pattern, survive Clear and are not counted.
	outsider := prefix[:len(prefix)-1] + "X:other"
	c.Set(ctx, outsider, "keep", time.Minute)
	t.Cleanup(func() { c.Del(context.Background(), outsider) })
	globPrefix := uniquePrefix(t, c) + "a*b?[c]"
	globCache := redis.New(c, globPrefix)
	globCache.Set(ctx, "k", []byte("v"), time.Minute)
	lookalike := strings.Replace(globPrefix, "a*b?[c]", "aZZbQc", 1) + "k"
	c.Set(ctx, lookalike, "keep", time.Minute)
	t.Cleanup(func() { c.Del(context.Background(), lookalike) })

	st, err := globCache.Stats(ctx)
	if err != nil || st.Size != 1 {
		t.Fatalf("glob-prefixed cache stats = %+v, %v; want size 1", st, err)
	}
	if err := globCache.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cc.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{outsider, lookalike} {
		if got, _ := c.Get(ctx, k).Result(); got != "keep" {
			t.Errorf("Clear deleted key %q outside its namespace", k)
		}
	}
	if n, _ := c.Exists(ctx, prefix+"site:1", globPrefix+"k").Result(); n != 0 {
		t.Errorf("Clear left %d namespaced keys", n)
	}
}

func TestStatsConnectedAndError(t *testing.T) {
	ctx := context.Background()
	c := client(t)
	st, err := redis.New(c, uniquePrefix(t, c)).Stats(ctx)
	if err != nil || st.Status != "connected" || st.Backend != "redis" || !strings.HasPrefix(st.Prefix, "lore-test:") {
		t.Fatalf("stats = %+v, %v", st, err)
	}

	dead, err := redis.Open("redis://127.0.0.1:1/0", "dead:")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	st, err = dead.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats on unreachable server returned error %v; want the status to carry it", err)
	}
	if !strings.HasPrefix(st.Status, "error: ") {
		t.Errorf("status for unreachable server = %q, want \"error: ...\"", st.Status)
	}
	if _, _, err := dead.Get(ctx, "k"); err == nil {
		t.Error("Get on unreachable server returned no error")
	}
	if st, _ := dead.Stats(ctx); st.Misses != 0 {
		t.Errorf("backend errors counted as misses: %+v", st)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	c := client(t)
	prefix := uniquePrefix(t, c)
	cc, err := redis.Open(redisURL(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := cc.Set(ctx, "k", []byte("via-open"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := cc.Get(ctx, "k"); err != nil || !ok || string(v) != "via-open" {
		t.Fatalf("Get = %q, %v, %v", v, ok, err)
	}
	if _, err := redis.Open("http://not-redis", "x:"); err == nil {
		t.Error("Open accepted a non-redis URL")
	}
	d, err := redis.Open(redisURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Prefix() != redis.DefaultPrefix {
		t.Errorf("empty prefix became %q, want %q", d.Prefix(), redis.DefaultPrefix)
	}
}
