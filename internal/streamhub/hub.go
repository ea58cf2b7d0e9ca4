// Package streamhub is the fast side channel of chat streaming: when the
// worker and the API share a process (the default `lore serve`), the model
// activity publishes each event here the moment it has it, and the API's SSE
// writer receives it without a round trip through the workflow engine. The
// ChatRun workflow's event log stays the source of truth: every event also
// reaches the log by signal, the API merges both by each event's origin key,
// and a reader without the hub (another process, a reconnect) reads the log.
package streamhub

import (
	"context"
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
	mu    sync.Mutex
	runs  map[string]*run
	ttl   time.Duration
	clean time.Time
}

type run struct {
	events  []Event
	changed chan struct{} // closed and replaced on every publish
	last    time.Time
}

// Default is the process-wide hub shared by the worker and the API.
var Default = New(2 * time.Minute)

// New returns a hub that forgets a run ttl after its last event.
func New(ttl time.Duration) *Hub { return &Hub{runs: map[string]*run{}, ttl: ttl} }

func (h *Hub) get(key string) *run {
	r := h.runs[key]
	if r == nil {
		r = &run{changed: make(chan struct{})}
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
		if r.last.IsZero() {
			r.last = time.Now() // a reader keeps an idle run alive for the ttl
		}
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
