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
