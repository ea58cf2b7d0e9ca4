// Package streamhub is the in-process meeting point of a chat run's reader
// (the API's SSE writer) and its worker, when both are in one process (the
// default `lore serve`): the run and its model calls, which then run as
// local activities, publish each event here the moment it exists, with its
// log sequence number, and the reader of that run reads only the hub. The
// run's event log in Temporal stays the source of truth: every event also
// reaches it (a model call's with its result), and every other reader (a
// reconnect elsewhere, a run whose worker is in another process) reads the
// log only. The hub also carries, per run, the reader's cancellation to the
// model call.
//
// A process builds one Hub (deps.Open) and passes it to its API and worker.
package streamhub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"hash/maphash"
	"sync"
	"time"
)

// Event is one published event.
type Event struct {
	Origin string // unique key of the event (activity id / attempt / index)
	Seq    int    // the sequence number it will have in the run's log
	Data   []byte // the SSE payload
}

// Hub holds the recent events of each run in memory.
type Hub struct {
	// ID names the hub's process: the API puts it in the chat runs it
	// starts (ChatRunInput.Reader), and a worker whose hub has that ID knows
	// the reader shares its hub.
	ID     string
	ttl    time.Duration
	seed   maphash.Seed
	shards []shard
}

// shard is a part of the runs under its own lock: every answer token of
// every run in the process is a Publish that wakes two goroutines of its
// reader, each of which takes the lock again, so with one lock for all runs
// hundreds of concurrent turns queue on it (the mutex profile of the chat
// bench at 200 concurrent turns showed nearly all contention there).
type shard struct {
	mu    sync.Mutex
	runs  map[string]*run
	clean time.Time
}

// shards is the number of shards of a hub: far more than the cores that
// publish at once, few enough that the clean-up sweeps stay cheap.
const shards = 64

type run struct {
	local     bool // the run itself published here: its workflow task runs in this process
	events    []Event
	changed   chan struct{} // closed and replaced on every publish
	cancel    chan struct{} // closed by Cancel
	cancelled bool
	last      time.Time // of the last publish or use (the ttl counts from it)
	published time.Time // of the last publish (WaitQuiet)
}

// New returns a hub that forgets a run ttl after its last event.
func New(ttl time.Duration) *Hub { return newHub(ttl, shards) }

func newHub(ttl time.Duration, n int) *Hub {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	h := &Hub{ID: hex.EncodeToString(b), ttl: ttl, seed: maphash.MakeSeed(), shards: make([]shard, n)}
	for i := range h.shards {
		h.shards[i].runs = map[string]*run{}
	}
	return h
}

// lock locks and returns the shard of key.
func (h *Hub) lock(key string) *shard {
	sh := &h.shards[maphash.String(h.seed, key)%uint64(len(h.shards))]
	sh.mu.Lock()
	return sh
}

func (sh *shard) get(key string) *run {
	r := sh.runs[key]
	if r == nil {
		// A new entry counts as used now: a reader keeps an idle run alive
		// for the ttl.
		r = &run{changed: make(chan struct{}), cancel: make(chan struct{}), last: time.Now()}
		sh.runs[key] = r
	}
	return r
}

// Publish appends an event to the run's stream and wakes its readers.
func (h *Hub) Publish(key string, ev Event) {
	sh := h.lock(key)
	defer sh.mu.Unlock()
	now := time.Now()
	r := sh.get(key)
	r.events = append(r.events, ev)
	r.last, r.published = now, now
	if ev.Origin == "" {
		r.local = true
	}
	close(r.changed)
	r.changed = make(chan struct{})
	if now.Sub(sh.clean) > h.ttl {
		sh.clean = now
		for k, old := range sh.runs {
			if now.Sub(old.last) > h.ttl {
				close(old.changed)
				delete(sh.runs, k)
			}
		}
	}
}

// Wait returns the run's events from index from on, waiting until there is
// at least one or ctx ends (then it returns what there is, possibly none).
func (h *Hub) Wait(ctx context.Context, key string, from int) []Event {
	for {
		sh := h.lock(key)
		r := sh.get(key)
		if from < len(r.events) {
			out := append([]Event(nil), r.events[from:]...)
			sh.mu.Unlock()
			return out
		}
		ch := r.changed
		sh.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		}
	}
}

// Cancel tells the run's model call in this process that its reader went
// away; it stops at once instead of waiting for the engine's cancellation.
func (h *Hub) Cancel(key string) {
	sh := h.lock(key)
	defer sh.mu.Unlock()
	r := sh.get(key)
	r.last = time.Now()
	if !r.cancelled {
		r.cancelled = true
		close(r.cancel)
	}
}

// Cancelled is closed when Cancel is called for the run.
func (h *Hub) Cancelled(key string) <-chan struct{} {
	sh := h.lock(key)
	defer sh.mu.Unlock()
	return sh.get(key).cancel
}

// WaitQuiet returns once no event has been published for the run during d
// (or ctx ends). A reader that also has a slower source uses it to leave
// that source alone while the hub delivers. It wakes when a period it waited
// for is over, not on every publish: a turn's every token would otherwise
// wake its watcher too, besides its reader.
func (h *Hub) WaitQuiet(ctx context.Context, key string, d time.Duration) {
	since := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sh := h.lock(key)
		last := sh.get(key).published
		sh.mu.Unlock()
		wait := time.Until(maxTime(since, last).Add(d))
		if wait <= 0 {
			return
		}
		t.Reset(wait)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Local reports whether the run's workflow published here (its own events
// carry no origin): the run then works in this process.
func (h *Hub) Local(key string) bool {
	sh := h.lock(key)
	defer sh.mu.Unlock()
	r := sh.runs[key]
	return r != nil && r.local
}
