package db

import (
	"sync"
	"time"

	"github.com/lorekb/lore/models"
)

// A turn's first model call reads its thread's context (LoadContext)
// moments after StartTurn wrote it, and for a thread StartTurn has just
// created that context is exactly the rows it wrote: no summary, the history
// and the user message. The process keeps it for that first read, which then
// needs no query (most reader chats are one question, so most turns are a
// new thread's first). An entry is read once, lives freshContextTTL at most,
// and any other write to the thread drops it; a read elsewhere (a worker in
// another process) queries as before.
const (
	freshContextTTL = 30 * time.Second
	maxFreshThreads = 4096
)

type freshEntry struct {
	conv    ConversationContext
	expires time.Time
}

// freshContexts are the contexts of threads this process created lately,
// not read yet.
type freshContexts struct {
	mu sync.Mutex
	m  map[string]freshEntry
}

// put keeps the context of thread, just created with rows.
func (f *freshContexts) put(thread string, rows []models.ChatMessage, now time.Time) {
	conv := ConversationContext{Messages: make([]models.ChatMessage, len(rows))}
	for i, r := range rows { // what LoadContext selects of each row
		conv.Messages[i] = models.ChatMessage{Position: r.Position, Role: r.Role, Content: r.Content}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]freshEntry{}
	}
	if len(f.m) >= maxFreshThreads {
		for k, e := range f.m {
			if now.After(e.expires) {
				delete(f.m, k)
			}
		}
		if len(f.m) >= maxFreshThreads {
			return // turns that never read theirs fill it: they query instead
		}
	}
	f.m[thread] = freshEntry{conv: conv, expires: now.Add(freshContextTTL)}
}

// take returns thread's kept context and forgets it.
func (f *freshContexts) take(thread string, now time.Time) (*ConversationContext, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[thread]
	if !ok {
		return nil, false
	}
	delete(f.m, thread)
	if now.After(e.expires) {
		return nil, false
	}
	return &e.conv, true
}

// drop forgets thread's kept context: the thread was written to.
func (f *freshContexts) drop(thread string) {
	f.mu.Lock()
	delete(f.m, thread)
	f.mu.Unlock()
}
