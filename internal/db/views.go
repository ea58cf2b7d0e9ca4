package db

import (
	"context"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Length limits of the stored request headers of a view event.
const (
	maxViewIP      = 64
	maxViewUA      = 512
	maxViewReferer = 1024
	// maxPendingEvents bounds memory while the database is down: beyond it
	// further event rows are dropped (and counted in Dropped), but their view
	// counts are still kept and written, so documents.views stays exact.
	maxPendingEvents = 1 << 20
	// insertBatch is the number of rows of one multi-row INSERT.
	insertBatch = 1000
)

// ViewRecorder batches document views so that a client detail read costs no
// write on the request path. Record keeps the view event and the per-document
// count in memory; a background flusher writes everything pending every
// interval in one transaction (a multi-row INSERT of the events and one
// "views = views + n" UPDATE per document). A failed flush keeps its data and
// is retried on the next tick, so no view is lost while the process lives;
// Close flushes what is left for a clean shutdown.
type ViewRecorder struct {
	db       *DB
	interval time.Duration

	mu       sync.Mutex
	events   []models.ViewEvent
	counts   map[int64]int64 // pending views per document, not yet flushed
	inflight map[int64]int64 // views of the flush being written

	flushMu   sync.Mutex // one flush at a time
	dropped   atomic.Int64
	onError   atomic.Pointer[func(error)]
	onFlushed atomic.Pointer[func(map[int64]int64)]

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// NewViewRecorder starts a recorder that flushes every flushInterval (at
// least 10ms; 200ms when zero).
func NewViewRecorder(db *DB, flushInterval time.Duration) *ViewRecorder {
	if flushInterval <= 0 {
		flushInterval = 200 * time.Millisecond
	}
	if flushInterval < 10*time.Millisecond {
		flushInterval = 10 * time.Millisecond
	}
	r := &ViewRecorder{db: db, interval: flushInterval, counts: map[int64]int64{},
		inflight: map[int64]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// OnError sets the function told about failed background flushes (they are
// retried on the next tick).
func (r *ViewRecorder) OnError(fn func(error)) { r.onError.Store(&fn) }

// OnFlushed sets the function told, after each committed flush, how many
// views were added to each document's stored count, so cached copies can be
// brought up to date. It runs while Record is held off, at the moment those
// views stop being pending, so stored-plus-pending stays consistent; it must
// be quick and must not call back into the recorder.
func (r *ViewRecorder) OnFlushed(fn func(added map[int64]int64)) { r.onFlushed.Store(&fn) }

// Record notes one view of the document and returns the number of views of
// that document not yet written to documents.views (this one included), so a
// response can show the stored count plus the pending ones.
func (r *ViewRecorder) Record(siteID, docID int64, ip, userAgent, referer string) int64 {
	ev := models.ViewEvent{SiteID: siteID, DocumentID: docID, IP: clip(ip, maxViewIP),
		UserAgent: clip(userAgent, maxViewUA), Referer: clip(referer, maxViewReferer), CreatedAt: time.Now().UTC()}
	r.mu.Lock()
	if len(r.events) < maxPendingEvents {
		r.events = append(r.events, ev)
	} else {
		r.dropped.Add(1)
	}
	r.counts[docID]++
	n := r.counts[docID] + r.inflight[docID]
	r.mu.Unlock()
	return n
}

// Pending returns the views of the document not yet written.
func (r *ViewRecorder) Pending(docID int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[docID] + r.inflight[docID]
}

// Dropped is the number of event rows discarded because too many were
// pending (their view counts were kept).
func (r *ViewRecorder) Dropped() int64 { return r.dropped.Load() }

// Flush writes everything pending now. On failure the data stays pending.
func (r *ViewRecorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	events, counts := r.events, r.counts
	if len(events) == 0 && len(counts) == 0 {
		r.mu.Unlock()
		return nil
	}
	r.events, r.counts, r.inflight = nil, map[int64]int64{}, counts
	r.mu.Unlock()

	err := r.write(ctx, events, counts)

	r.mu.Lock()
	r.inflight = map[int64]int64{}
	if err == nil {
		if fn := r.onFlushed.Load(); fn != nil {
			(*fn)(counts)
		}
	} else {
		// Put the batch back in front of what arrived meanwhile.
		r.events = append(events, r.events...)
		if len(r.events) > maxPendingEvents {
			r.dropped.Add(int64(len(r.events) - maxPendingEvents))
			r.events = r.events[:maxPendingEvents]
		}
		for id, n := range r.counts {
			counts[id] += n
		}
		r.counts = counts
	}
	r.mu.Unlock()
	return err
}

func (r *ViewRecorder) write(ctx context.Context, events []models.ViewEvent, counts map[int64]int64) error {
	ids := make([]int64, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	// A fixed lock order keeps concurrent flushers (several API processes)
	// free of deadlocks.
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if r.db.Postgres() {
		return r.writePG(ctx, events, ids, counts)
	}
	return r.db.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Explicit column lists (bun's multi-row insert on SQLite leaves out a
		// defaulted column for every row when the first row's value is
		// empty), and only for documents that still exist: a view buffered
		// while its site was being deleted must not outlive the site.
		row := "(CAST(? AS BIGINT), CAST(? AS BIGINT), ?, ?, ?, ?)"
		if r.db.Postgres() {
			row = "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TIMESTAMPTZ))"
		}
		err := execValues(ctx, tx, len(events), 6, "WITH v(site_id, document_id, ip, user_agent, referer, created_at) AS (VALUES ", row,
			") INSERT INTO view_events (site_id, document_id, ip, user_agent, referer, created_at) "+
				"SELECT site_id, document_id, ip, user_agent, referer, created_at FROM v "+
				"WHERE EXISTS (SELECT 1 FROM documents d WHERE d.id = v.document_id)",
			func(i int, args []any) []any {
				e := events[i]
				return append(args, e.SiteID, e.DocumentID, e.IP, e.UserAgent, e.Referer, e.CreatedAt)
			})
		if err != nil {
			return err
		}
		// One statement adds every document's new views (not one per document).
		return execValues(ctx, tx, len(ids), 2, "WITH v(id, n) AS (VALUES ", "(CAST(? AS BIGINT), CAST(? AS BIGINT))",
			") UPDATE documents SET views = documents.views + v.n FROM v WHERE documents.id = v.id",
			func(i int, args []any) []any { return append(args, ids[i], counts[ids[i]]) })
	})
}

// execValues runs head, a VALUES list of n rows and tail as statements of at
// most insertBatch rows each: row is one row's placeholders (width of them)
// and add appends row i's arguments.
func execValues(ctx context.Context, tx bun.Tx, n, width int, head, row, tail string, add func(i int, args []any) []any) error {
	for start := 0; start < n; start += insertBatch {
		end := min(start+insertBatch, n)
		var q strings.Builder
		args := make([]any, 0, width*(end-start))
		q.WriteString(head)
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString(row)
			args = add(i, args)
		}
		q.WriteString(tail)
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// writePG is write for PostgreSQL: each statement takes its rows as a few
// array literals unnested on the server. A flush carries about a thousand
// views at a few thousand reads a second; as a VALUES list with a cast per
// value the statement text alone was ~150 KB to parse, five times a second.
func (r *ViewRecorder) writePG(ctx context.Context, events []models.ViewEvent, ids []int64, counts map[int64]int64) error {
	site := make([]int64, len(events))
	doc := make([]int64, len(events))
	ip := make([]string, len(events))
	ua := make([]string, len(events))
	ref := make([]string, len(events))
	at := make([]string, len(events))
	for i, e := range events {
		site[i], doc[i], ip[i], ua[i], ref[i] = e.SiteID, e.DocumentID, e.IP, e.UserAgent, e.Referer
		at[i] = e.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	n := make([]int64, len(ids))
	for i, id := range ids {
		n[i] = counts[id]
	}
	return r.db.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Only for documents that still exist: a view buffered while its
		// site was being deleted must not outlive the site.
		if len(events) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO view_events (site_id, document_id, ip, user_agent, referer, created_at)
SELECT v.site_id, v.document_id, v.ip, v.user_agent, v.referer, v.created_at
FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TIMESTAMPTZ[]))
  AS v(site_id, document_id, ip, user_agent, referer, created_at)
WHERE EXISTS (SELECT 1 FROM documents d WHERE d.id = v.document_id)`,
				pgdialect.Array(site), pgdialect.Array(doc), pgdialect.Array(ip), pgdialect.Array(ua), pgdialect.Array(ref),
				pgdialect.Array(at)); err != nil {
				return err
			}
		}
		if len(ids) == 0 {
			return nil
		}
		// One statement adds every document's new views, in id order.
		_, err := tx.ExecContext(ctx, `UPDATE documents SET views = documents.views + v.n
FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[])) AS v(id, n) WHERE documents.id = v.id`,
			pgdialect.Array(ids), pgdialect.Array(n))
		return err
	})
}

func (r *ViewRecorder) loop() {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := r.Flush(ctx); err != nil {
				if fn := r.onError.Load(); fn != nil {
					(*fn)(err)
				}
			}
			cancel()
		}
	}
}

// Close stops the background flusher and writes what is pending. Call it
// after the HTTP server has stopped taking requests; views recorded later
// are only written by another Flush.
func (r *ViewRecorder) Close(ctx context.Context) error {
	r.closeOnce.Do(func() { close(r.stop) })
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.Flush(ctx)
}

func clip(s string, n int) string {
	// Header bytes are not text: the database refuses NUL and invalid UTF-8,
	// and one such view would fail every flush after it.
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	}
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
