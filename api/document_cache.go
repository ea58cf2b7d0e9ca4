package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
)

// docState is the per-Server state of the client document detail path: the
// lazily started view recorder. The caches it reads through are s.cache
// (internal/readcache), which the database's writes invalidate.
type docState struct {
	once sync.Once
	rec  atomic.Pointer[db.ViewRecorder]
}

func newDocState() *docState { return &docState{} }

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
		r.OnFlushed(s.addViews)
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

// docEntry is a cached client document detail: the document without its
// content, which is kept once, in the encoded body.
type docEntry struct {
	doc  DocumentResponse
	body detailBody
}

// docEntrySize is what an entry counts against readcache.DetailBytes.
func docEntrySize(e docEntry) int {
	return 512 + len(e.doc.Title) + len(textOf(e.doc.Summary)) + len(textOf(e.doc.CoverImage)) + len(e.body.head) + len(e.body.tail)
}

// addViews adds flushed views to the cached details, which therefore keep
// showing stored plus pending views without being re-read.
func (s *Server) addViews(added map[int64]int64) {
	ids := make([]int64, 0, len(added))
	for id := range added {
		ids = append(ids, id)
	}
	s.cache.Details.Update(ids, func(id int64, e *docEntry) { e.doc.Views += added[id] })
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

// clientDetail returns the detail of a document for the Client API, from the
// cache or from the database (nil, nil when it does not exist). A cached
// detail carries its content in the body only; a detail without a body (not
// encodable) is never cached.
func (s *Server) clientDetail(c *fiber.Ctx, id int64) (*DocumentResponse, detailBody, error) {
	cached, hit, gen := s.cache.Details.Get(id)
	if hit {
		return &cached.doc, cached.body, nil
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
	body := encodeDetail(doc)
	if body.head != nil {
		// The content is held once, in the encoded body: twice as many
		// documents fit in the bound.
		e := docEntry{doc: doc, body: body}
		e.doc.Content = nil
		s.cache.Details.Put(gen, id, e)
	}
	return &doc, body, nil
}

// --- response building ---
