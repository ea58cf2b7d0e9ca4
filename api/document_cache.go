package api

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
)

// docState is the per-Server state of the client document detail path: the
// lazily started view recorder and the detail cache.
type docState struct {
	once  sync.Once
	rec   atomic.Pointer[db.ViewRecorder]
	cache *docCache
	lists *listCache
}

func newDocState() *docState {
	return &docState{cache: newDocCache(clientDocTTL, clientDocCacheBytes), lists: &listCache{m: map[string]listEntry{}}}
}

// listCache keeps encoded client list responses for clientDocTTL, keyed by
// the query string: a popular search is answered from memory. Any document
// or collection write through this process drops all of them; another
// process's writes show within the TTL. The site visibility and access
// checks still run on every request.
type listCache struct {
	mu sync.Mutex
	m  map[string]listEntry
}

type listEntry struct {
	body []byte
	exp  time.Time
}

const listCacheMax = 4096

func (l *listCache) get(key string) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[key]
	if !ok || time.Now().After(e.exp) {
		return nil, false
	}
	return e.body, true
}

func (l *listCache) put(key string, body []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) >= listCacheMax {
		l.m = map[string]listEntry{}
	}
	l.m[key] = listEntry{body: body, exp: time.Now().Add(clientDocTTL)}
}

func (l *listCache) clear() {
	l.mu.Lock()
	l.m = map[string]listEntry{}
	l.mu.Unlock()
}

func (s *Server) docState() *docState { return s.docs }

// views returns the server's view recorder, starting it on first use with
// the configured flush interval. A committed flush adds the written views to
// the cached details, which therefore keep showing stored plus pending views
// without being re-read.
func (s *Server) views() *db.ViewRecorder {
	st := s.docState()
	st.once.Do(func() {
		r := db.NewViewRecorder(s.d.DB, s.d.Cfg.ViewFlushInterval)
		r.OnError(func(err error) { s.log.Warn("view flush failed; retrying next tick", "err", err) })
		r.OnFlushed(st.cache.addViews)
		st.rec.Store(r)
	})
	return st.rec.Load()
}

// FlushViews writes the pending document views now (tests, admin stats).
func (s *Server) FlushViews(ctx context.Context) error {
	if r := s.docs.rec.Load(); r != nil {
		return r.Flush(ctx)
	}
	return nil
}

// CloseViews stops the view flusher and writes what is pending; call it on
// shutdown after the HTTP server has stopped.
func (s *Server) CloseViews(ctx context.Context) error {
	if r := s.docs.rec.Load(); r != nil {
		return r.Close(ctx)
	}
	return nil
}

// forgetDocuments drops cached client details after a write; with no ids it
// drops them all (collection renames and moves change many paths).
func (s *Server) forgetDocuments(ids ...int64) {
	s.docs.lists.clear()
	if len(ids) == 0 {
		s.docs.cache.clear()
	} else {
		s.docs.cache.forget(ids...)
	}
}

// The client document detail is the hottest read. Its payload (document,
// site names, collection path) is cached in process for clientDocTTL, bounded
// to clientDocCacheBytes, so that a read costs only the site visibility
// check. Writes through this process drop the entries at once (document
// update and delete, collection changes) and view flushes update them;
// writes and flushes of another API process show within the TTL.
const (
	clientDocTTL        = 5 * time.Second
	clientDocCacheBytes = 64 << 20
)

// docCache is a byte-bounded LRU of document details with expiry. A fill
// started before an invalidation is not stored (generation check), so an
// entry never predates the last write this process made.
type docCache struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	size  int
	gen   uint64
	ll    *list.List
	items map[int64]*list.Element
}

type docEntry struct {
	id      int64
	doc     DocumentResponse // without its content: that is in body only
	body    detailBody       // doc as JSON, cut around its view count
	size    int
	expires time.Time
}

// detailBody is a document's JSON cut at its view count: a cached detail is
// written as head + views + tail, without encoding the document again (its
// content is most of the bytes; the count changes on every read).
type detailBody struct {
	head, tail []byte
}

// viewsMark stands in for the view count while a document is encoded; a
// quote inside a JSON string is escaped, so the sequence occurs only as the
// "views" member itself.
const viewsMark = int64(-7_777_777_777_777)

var viewsMarkJSON = []byte(`"views":` + strconv.FormatInt(viewsMark, 10))

func encodeDetail(doc DocumentResponse) detailBody {
	doc.Views = viewsMark
	b, err := json.Marshal(doc)
	if err != nil {
		return detailBody{}
	}
	i := bytes.Index(b, viewsMarkJSON)
	if i < 0 {
		return detailBody{}
	}
	cut := i + len(`"views":`)
	return detailBody{head: b[:cut], tail: b[i+len(viewsMarkJSON):]}
}

// write writes the success envelope of the document with the given view
// count: byte for byte what ok(c, doc) writes.
func (d detailBody) write(c *fiber.Ctx, views int64) error {
	msg, _ := json.Marshal(msgSuccess(c))
	buf := make([]byte, 0, len(d.head)+len(d.tail)+len(msg)+48)
	buf = append(buf, `{"code":0,"msg":`...)
	buf = append(buf, msg...)
	buf = append(buf, `,"data":`...)
	buf = append(buf, d.head...)
	buf = strconv.AppendInt(buf, views, 10)
	buf = append(buf, d.tail...)
	buf = append(buf, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(buf)
}

func newDocCache(ttl time.Duration, maxBytes int) *docCache {
	return &docCache{ttl: ttl, max: maxBytes, ll: list.New(), items: map[int64]*list.Element{}}
}

// get returns a copy of the cached detail (its content only in the body)
// and the current generation (to be passed to put after a miss).
func (c *docCache) get(id int64) (DocumentResponse, detailBody, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		e := el.Value.(*docEntry)
		if time.Now().Before(e.expires) {
			c.ll.MoveToFront(el)
			return e.doc, e.body, true, c.gen
		}
		c.remove(el)
	}
	return DocumentResponse{}, detailBody{}, false, c.gen
}

// put stores doc unless something was invalidated since gen was read. The
// content is kept once, in the encoded body: the largest part of a document
// is not held twice, so twice as many documents fit in the bound.
func (c *docCache) put(gen uint64, doc DocumentResponse) detailBody {
	body := encodeDetail(doc)
	size := 512 + len(doc.Title) + len(textOf(doc.Summary)) + len(textOf(doc.CoverImage)) + len(body.head) + len(body.tail)
	if body.head == nil || size > c.max/16 {
		return body
	}
	doc.Content = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return body
	}
	if el, ok := c.items[doc.ID]; ok {
		c.remove(el)
	}
	c.items[doc.ID] = c.ll.PushFront(&docEntry{id: doc.ID, doc: doc, body: body, size: size, expires: time.Now().Add(c.ttl)})
	c.size += size
	for c.size > c.max {
		c.remove(c.ll.Back())
	}
	return body
}

// addViews adds flushed views to the cached details. It bumps the
// generation so that a fill that read the row before the flush is dropped.
func (c *docCache) addViews(added map[int64]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for id, n := range added {
		if el, ok := c.items[id]; ok {
			el.Value.(*docEntry).doc.Views += n
		}
	}
}

func (c *docCache) forget(ids ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, id := range ids {
		if el, ok := c.items[id]; ok {
			c.remove(el)
		}
	}
}

func (c *docCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.ll.Init()
	c.items = map[int64]*list.Element{}
	c.size = 0
}

func (c *docCache) remove(el *list.Element) {
	e := el.Value.(*docEntry)
	c.ll.Remove(el)
	delete(c.items, e.id)
	c.size -= e.size
}

// clientDetail returns the detail of a document for the Client API, from the
// cache or from the database (nil, nil when it does not exist). A cached
// detail carries its content in the body only; a detail without a body (not
// encodable) is never cached.
func (s *Server) clientDetail(c *fiber.Ctx, id int64) (*DocumentResponse, detailBody, error) {
	cache := s.docState().cache
	cached, body, hit, gen := cache.get(id)
	if hit {
		return &cached, body, nil
	}
	row, err := s.d.DB.GetDocumentWithSite(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, detailBody{}, nil
	}
	if err != nil {
		return nil, detailBody{}, err
	}
	doc, err := s.documentDetail(c, row)
	if err != nil {
		return nil, detailBody{}, err
	}
	body = cache.put(gen, doc)
	return &doc, body, nil
}

// --- response building ---
