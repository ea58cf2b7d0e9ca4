package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// client calls the Client API of the same Fiber app in process: the pages
// are the JSON API's first client, with no second path to the data. Each
// call is a fresh request through the whole app (middleware included) from
// the reader's own address, with the headers that the API reads about its
// caller (user agent, referer, language, forwarding headers), so a document
// view is recorded for the reader as a direct API read would be.
type client struct {
	app  *fiber.App
	once sync.Once
	h    fasthttp.RequestHandler
}

// forwarded are the reader's request headers a call carries on.
var forwarded = []string{fiber.HeaderUserAgent, fiber.HeaderReferer, fiber.HeaderAcceptLanguage,
	fiber.HeaderXForwardedFor, fiber.HeaderXForwardedProto, fiber.HeaderXForwardedHost, "X-Real-IP"}

// apiError is a Client API answer other than 2xx.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Msg) }

// envelope is the API's {code, msg, data}.
type envelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// call sends method path (with query) and, for a 2xx, decodes the
// envelope's data into out. token is the site access token ("" none); body
// (nil: none) is sent as JSON.
func (cl *client) call(c *fiber.Ctx, method, path string, query url.Values, token string, body any, out any) error {
	cl.once.Do(func() { cl.h = cl.app.Handler() })
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(method)
	uri := path
	if len(query) > 0 {
		uri += "?" + query.Encode()
	}
	req.SetRequestURI(uri)
	req.Header.SetHost(string(c.Request().Host()))
	for _, h := range forwarded {
		if v := c.Request().Header.Peek(h); len(v) > 0 {
			req.Header.SetBytesV(h, v)
		}
	}
	if id := c.GetRespHeader(fiber.HeaderXRequestID); id != "" {
		req.Header.Set(fiber.HeaderXRequestID, id)
	}
	req.Header.Set(fiber.HeaderAccept, fiber.MIMEApplicationJSON)
	if token != "" {
		req.Header.Set("X-Site-Access-Token", token)
	}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req.Header.SetContentType(fiber.MIMEApplicationJSON)
		req.SetBody(b)
	}
	var fctx fasthttp.RequestCtx
	fctx.Init(req, c.Context().RemoteAddr(), nil)
	cl.h(&fctx)
	status := fctx.Response.StatusCode()
	raw := fctx.Response.Body()
	if status < 200 || status > 299 {
		var env envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			return &apiError{Status: status, Msg: fmt.Sprintf("unreadable answer (%d bytes)", len(raw))}
		}
		return &apiError{Status: status, Msg: env.Msg}
	}
	if out == nil {
		return nil
	}
	// One pass over the answer: the envelope's data decodes straight into
	// out (a site's tree is most of a page's bytes).
	if err := json.Unmarshal(raw, &struct {
		Data any `json:"data"`
	}{Data: out}); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// The Client API shapes the pages read (the fields they show).

type quickQuestion struct {
	Text string `json:"text"`
}

type site struct {
	ID               int64           `json:"id"`
	Name             string          `json:"name"`
	Slug             string          `json:"slug"`
	Description      *string         `json:"description"`
	ArticleCount     int64           `json:"article_count"`
	ViewCount        int64           `json:"view_count"`
	TenantSlug       string          `json:"tenant_slug"`
	ThemeColor       string          `json:"theme_color"`
	LayoutMode       string          `json:"layout_mode"`
	QuickQuestions   []quickQuestion `json:"quick_questions"`
	IsPublic         bool            `json:"is_public"`
	RequiresPassword bool            `json:"requires_password"`
}

type pagination struct {
	Page  int `json:"page"`
	Size  int `json:"size"`
	Total int `json:"total"`
}

type page[T any] struct {
	List       []T        `json:"list"`
	Pagination pagination `json:"pagination"`
}

type treeNode struct {
	ID       int64      `json:"id"`
	Title    string     `json:"title"`
	Type     string     `json:"type"`
	Children []treeNode `json:"children"`
}

type collectionRef struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
}

type docCollection struct {
	ID        int64           `json:"id"`
	Title     string          `json:"title"`
	Ancestors []collectionRef `json:"ancestors"`
}

type document struct {
	ID          int64          `json:"id"`
	Title       string         `json:"title"`
	Content     *string        `json:"content"`
	Summary     *string        `json:"summary"`
	SiteID      int64          `json:"site_id"`
	Author      string         `json:"author"`
	Tags        []string       `json:"tags"`
	Views       int64          `json:"views"`
	ReadingTime int            `json:"reading_time"`
	UpdatedAt   time.Time      `json:"updated_at"`
	Collection  *docCollection `json:"collection"`
	CoverImage  *string        `json:"cover_image"`
}

type accessToken struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
}
