package deps

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/vector"
)

// Opening a Milvus store that cannot be reached holds no lock other model
// lookups need, fails within the caller's deadline as retryable, and is
// tried again on the next call (a Temporal retry) rather than cached.
func TestVectorsOpenOutsideModelLock(t *testing.T) {
	cfg, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": "none",
		"MILVUS_ADDRESS": "127.0.0.1:1"})) // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	open := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := d.Vectors(ctx, 8)
		return time.Since(start), err
	}
	done := make(chan error, 1)
	go func() { _, err := open(); done <- err }()
	time.Sleep(200 * time.Millisecond) // the open is dialling now
	start := time.Now()
	if _, err := d.EmbedderFor(ModelConfig{Provider: "local", Dimension: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reranker(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 100*time.Millisecond {
		t.Errorf("model lookups waited %v behind the vector store's dial", waited)
	}
	if err := <-done; !errors.Is(err, vector.ErrUnavailable) {
		t.Fatalf("unreachable Milvus: %v, want ErrUnavailable", err)
	}
	took, err := open()
	if !errors.Is(err, vector.ErrUnavailable) || took < 500*time.Millisecond {
		t.Fatalf("second open: %v after %v, want a new attempt failing as unavailable", err, took)
	}
}

// Every store opened through Vectors is closed by Close (which the process
// runs after its worker has stopped), whichever goroutine opened it.
func TestVectorStoresClosedOnClose(t *testing.T) {
	cfg, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": "none"}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stores := make(chan vector.Store, 2)
	for _, dim := range []int{8, 16} {
		go func() {
			s, err := d.Vectors(ctx, dim)
			if err != nil {
				t.Error(err)
			}
			stores <- s
		}()
	}
	a, b := <-stores, <-stores
	if same, _ := d.Vectors(ctx, 8); same != a && same != b {
		t.Fatal("a second call opened another store")
	}
	d.Close()
	for _, s := range []vector.Store{a, b} {
		if _, err := s.Count(ctx); !errors.Is(err, vector.ErrClosed) {
			t.Errorf("store still open after Close: %v", err)
		}
	}
}
