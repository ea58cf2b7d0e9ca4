package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/lorekb/lore/internal/vector"
)

// TestConcurrentUpsertsPrepared has several writers upsert into one indexed
// site at once, so their prepared list choices go stale under each other's
// splits, and checks the index, searches over every list against the exact
// scan, and that the keyword index built from prepared terms equals the one
// recovery builds (after a reopen, every chunk is analysed while applied).
func TestConcurrentUpsertsPrepared(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openANN(t, dir, fullANN)
	words := []string{"backup", "restore", "archive", "upgrade", "network", "disk", "kernel", "package"}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen := newClustered(uint64(10+w), ivfDim, 20)
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for b := 0; b < 20; b++ {
				var cs []vector.Chunk
				for j := 0; j < 100; j++ {
					c := genChunk(1, w*1_000_000+b*100+j, gen.next())
					c.Text = fmt.Sprintf("%s %s %s", words[rng.IntN(len(words))], words[rng.IntN(len(words))], c.Text)
					cs = append(cs, c)
				}
				if err := s.Upsert(ctx, cs); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := count(t, s); n != 8000 {
		t.Fatalf("%d chunks, want 8000", n)
	}
	checkIndex(t, s)
	gen := newClustered(99, ivfDim, 20)
	for q := 0; q < 20; q++ {
		v := gen.next()
		if got, want := searchIDs(t, s, 1, v, 10, -1), exact(s, 1, v, 10, -1); !sameIDs(got, want) {
			t.Fatalf("search over every list %v, exact %v", got, want)
		}
	}
	keyword := func(s *Store) map[string][]string {
		out := map[string][]string{}
		for _, w := range words {
			hits, err := s.KeywordSearch(ctx, 1, w, 50)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				out[w] = append(out[w], fmt.Sprintf("%s %.5f", h.ChunkID, h.Score))
			}
		}
		return out
	}
	live := keyword(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openANN(t, dir, fullANN)
	defer s.Close()
	checkIndex(t, s)
	reopened := keyword(s)
	for _, w := range words {
		if len(live[w]) == 0 || !slices.Equal(live[w], reopened[w]) {
			t.Fatalf("keyword %q: live %v, after reopen %v", w, live[w], reopened[w])
		}
	}
}

// TestIVFAddListHint: a list chosen before the lock is used while it is in
// the index; one that was split away since is not (the row goes to the
// nearest current list instead).
func TestIVFAddListHint(t *testing.T) {
	ctx := context.Background()
	s := openANN(t, t.TempDir(), smallANN)
	defer s.Close()
	gen := newClustered(4, ivfDim, 20)
	var cs []vector.Chunk
	for i := 0; i < 3000; i++ {
		cs = append(cs, genChunk(1, i, gen.next()))
	}
	if err := s.Upsert(ctx, cs); err != nil {
		t.Fatal(err)
	}
	st := s.sites[1]
	x := st.ann
	if x == nil || len(x.lists) < 3 {
		t.Fatalf("no index of several lists: %+v", x)
	}
	v := normalize(gen.next())
	best := nearest(x.cents, ivfDim, v)
	other := (best + 1) % len(x.lists)
	add := func(near *ivfList) int {
		st.vecs.push(v)
		r := len(x.rowList)
		x.add(r, v, nil, 0, near, &st.vecs)
		return int(x.rowList[r])
	}
	if got := add(x.lists[other]); got != other {
		t.Fatalf("with a current hint the row went to list %d, want the hinted %d", got, other)
	}
	gone := &ivfList{at: best} // a list no longer in the index
	if got := add(gone); got != nearest(x.cents, ivfDim, v) {
		t.Fatalf("with a stale hint the row went to list %d, want the nearest %d", got, best)
	}
}
