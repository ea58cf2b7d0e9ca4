package load

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var l Latencies
	for i := 100; i >= 1; i-- {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	l.Sort()
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 1: time.Millisecond} {
		if got := l.Percentile(p); got != want {
			t.Errorf("p%.0f = %s, want %s", p, got, want)
		}
	}
	if (Latencies{}).Percentile(50) != 0 {
		t.Error("empty list")
	}
}
