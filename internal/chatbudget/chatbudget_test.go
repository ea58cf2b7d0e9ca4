package chatbudget

import (
	"context"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache/memory"
)

func TestBudgetCountsPerScopeAndUTCDay(t *testing.T) {
	ctx := context.Background()
	c := memory.New(10)
	day := time.Date(2026, 11, 24, 23, 59, 0, 0, time.FixedZone("UTC+8", 8*3600)) // 15:59 UTC
	if got := UntilReset(day); got != 8*time.Hour+time.Minute {
		t.Fatalf("until reset %s", got)
	}
	if Scope(7, 1) != "s7" || Scope(0, 1) != "t1" {
		t.Fatalf("scopes %q %q", Scope(7, 1), Scope(0, 1))
	}
	for _, n := range []int64{100, 50, 0, -5} {
		if err := Add(ctx, c, Scope(7, 1), n, day); err != nil {
			t.Fatal(err)
		}
	}
	if err := Add(ctx, c, Scope(0, 1), 30, day); err != nil {
		t.Fatal(err)
	}
	for scope, want := range map[string]int64{"s7": 150, "t1": 30, "s8": 0} {
		if got, err := Used(ctx, c, scope, day); err != nil || got != want {
			t.Fatalf("%s: %d %v, want %d", scope, got, err, want)
		}
	}
	// The next UTC day starts from zero.
	if got, _ := Used(ctx, c, "s7", day.Add(9*time.Hour)); got != 0 {
		t.Fatalf("next day: %d", got)
	}
}

// TestReserveCountsAheadAndReleases: a reservation counts at once, so
// concurrent turns see each other's; one that would pass the budget is
// refused and counts nothing; released, only the real usage stays.
func TestReserveCountsAheadAndReleases(t *testing.T) {
	ctx := context.Background()
	c := memory.New(10)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if got := Estimate(7, 5); got != 20 {
		t.Fatalf("estimate %d", got)
	}
	if got := Estimate(0, 0); got != 1 {
		t.Fatalf("estimate of nothing %d", got)
	}
	a, ok, err := Reserve(ctx, c, "s1", 600, 1000, now)
	if err != nil || !ok || a.Tokens() != 600 {
		t.Fatalf("first: %v %v %+v", ok, err, a)
	}
	if _, ok, _ := Reserve(ctx, c, "s1", 500, 1000, now); ok {
		t.Fatal("a second turn passed the budget with the first one in flight")
	}
	if got, _ := Used(ctx, c, "s1", now); got != 600 {
		t.Fatalf("after the refusal: %d, want 600", got)
	}
	b, ok, _ := Reserve(ctx, c, "s1", 400, 1000, now)
	if !ok {
		t.Fatal("a turn that fits was refused")
	}
	// The first turn used 700 tokens; its reservation goes back.
	if err := Add(ctx, c, "s1", 700, now); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := Used(ctx, c, "s1", now); got != 1100 {
		t.Fatalf("used 700 with 400 reserved: %d", got)
	}
	if err := b.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := (Reservation{}).Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := Used(ctx, c, "s1", now); got != 700 {
		t.Fatalf("after both releases: %d, want 700", got)
	}
	// A reservation released after midnight leaves the new day alone.
	d, _, _ := Reserve(ctx, c, "s2", 50, 1000, now)
	_ = Add(ctx, c, "s2", 10, now.Add(13*time.Hour))
	_ = d.Release(ctx, c)
	if got, _ := Used(ctx, c, "s2", now.Add(13*time.Hour)); got != 10 {
		t.Fatalf("next day: %d", got)
	}
}
