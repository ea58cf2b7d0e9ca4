package activities

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/convert"
)

// spinner converts nothing until released, whatever its context says.
type spinner struct{ release chan struct{} }

func (spinner) Name() string      { return "spinner" }
func (spinner) Formats() []string { return []string{"spin"} }
func (s spinner) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	<-s.release
	return &convert.Result{Markdown: "late"}, nil
}

// TestConvertFileBudget: a file whose conversion runs past the import's
// budget fails alone, as a file failure (not retried), at the budget; a
// cancelled activity stops the conversion and is not the file's failure.
func TestConvertFileBudget(t *testing.T) {
	s := spinner{release: make(chan struct{})}
	defer close(s.release)
	a := &Import{FileTimeout: 300 * time.Millisecond}
	conv := registryConverter{convert.NewRegistry(s)}
	in := ImportFileInput{File: ImportFile{Name: "loop.spin"}}
	start := time.Now()
	_, err := a.convertFile(context.Background(), conv, in, []byte("x"))
	if !isFileFailure(err) || !strings.Contains(failureReason(err), "loop.spin: the file took too long to convert") {
		t.Fatalf("%v, want the file to fail as too slow", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("failed after %v", d)
	}

	a.FileTimeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	_, err = a.convertFile(ctx, conv, in, []byte("x"))
	if isFileFailure(err) || !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("%v after %v, want the activity's cancellation", err, time.Since(start))
	}
	if got := (&Import{}).fileTimeout(conv); got != convert.DefaultLimits.Timeout {
		t.Fatalf("default budget %v", got)
	}
	if got := (&Import{}).fileTimeout(s); got < processorTimeout {
		t.Fatalf("an external processor's budget %v is under its HTTP limit", got)
	}
}

// TestLiveness: a file in flight past the limit makes the activity stuck
// (its heartbeats stop); finishing it clears that.
func TestLiveness(t *testing.T) {
	l := newLiveness(50 * time.Millisecond)
	done := l.begin()
	if l.stuck() {
		t.Fatal("stuck at once")
	}
	time.Sleep(100 * time.Millisecond)
	if !l.stuck() {
		t.Fatal("not stuck past the limit")
	}
	done()
	if l.stuck() {
		t.Fatal("still stuck with nothing in flight")
	}
}
