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
	ID    string
	mu    sync.Mutex
	runs  map[string]*run
	ttl   time.Duration
	clean time.Time
}

type run struct {
	local     bool // the run itself published here: its workflow task runs in this process
	events    []Event
	changed   chan struct{} // closed and replaced on every publish
	cancel    chan struct{} // closed by Cancel
	cancelled bool
	last      time.Time
}

// New returns a hub that forgets a run ttl after its last event.
func New(ttl time.Duration) *Hub {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Hub{ID: hex.EncodeToString(b), runs: map[string]*run{}, ttl: ttl}
}

func (h *Hub) get(key string) *run {
	r := h.runs[key]
	if r == nil {
		// A new entry counts as used now: a reader keeps an idle run alive
		// for the ttl.
		r = &run{changed: make(chan struct{}), cancel: make(chan struct{}), last: time.Now()}
		h.runs[key] = r
	}
	return r
}

// Publish appends an event to the run's stream and wakes its readers.
func (h *Hub) Publish(key string, ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	r := h.get(key)
	r.events = append(r.events, ev)
	r.last = now
	if ev.Origin == "" {
		r.local = true
	}
	close(r.changed)
	r.changed = make(chan struct{})
	if now.Sub(h.clean) > h.ttl {
		h.clean = now
		for k, old := range h.runs {
			if now.Sub(old.last) > h.ttl {
				close(old.changed)
				delete(h.runs, k)
			}
		}
	}
}

// Wait returns the run's events from index from on, waiting until there is
// at least one or ctx ends (then it returns what there is, possibly none).
func (h *Hub) Wait(ctx context.Context, key string, from int) []Event {
	for {
		h.mu.Lock()
		r := h.get(key)
		if from < len(r.events) {
			out := append([]Event(nil), r.events[from:]...)
			h.mu.Unlock()
			return out
		}
		ch := r.changed
		h.mu.Unlock()
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
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.get(key)
	r.last = time.Now()
	if !r.cancelled {
		r.cancelled = true
		close(r.cancel)
	}
}

// Cancelled is closed when Cancel is called for the run.
func (h *Hub) Cancelled(key string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.get(key).cancel
}

// WaitQuiet returns once no event has been published for the run during d
// (or ctx ends). A reader that also has a slower source uses it to leave
// that source alone while the hub delivers.
func (h *Hub) WaitQuiet(ctx context.Context, key string, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		h.mu.Lock()
		ch := h.get(key).changed
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-ch:
			t.Reset(d)
		}
	}
}

// Local reports whether the run's workflow published here (its own events
// carry no origin): the run then works in this process.
func (h *Hub) Local(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.runs[key]
	return r != nil && r.local
}
