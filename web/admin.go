package web

// The admin console at /admin: one page (templates/admin.html) whose script
// (static/admin.js) logs in with the Admin API (/admin/api/v1/users:login),
// keeps the JWT in the browser and calls the Admin API with it for every
// view (sites, collections, documents, import, jobs, AI configuration,
// users, analytics). The server holds no console state: the page is the
// same for everyone, and what a user may do is the API's decision; the
// script only hides what the user's role may not do. The one server route
// besides the page is the Markdown preview, which renders with the reader's
// own renderer and sanitizer so a preview is what readers will see.

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// AdminPath is where the console is served.
const AdminPath = "/admin"

// previewMax bounds the Markdown a preview renders (the documents the
// console edits are at most this large in practice; larger is 413).
const previewMax = 2 << 20

func (w *Web) mountAdmin(app *fiber.App) {
	page := template.Must(template.New("admin.html").Funcs(funcs).ParseFS(files, "templates/admin.html"))
	var buf bytes.Buffer
	if err := page.Execute(&buf, map[string]string{"Assets": AssetsPath}); err != nil {
		panic(err)
	}
	html := buf.Bytes()
	serve := func(c *fiber.Ctx) error {
		pageHeaders(c)
		return c.Send(html)
	}
	app.Get(AdminPath, serve)
	app.Get(AdminPath+"/", serve)
	app.Post(AdminPath+"/preview", w.preview)
}

// preview renders a document's Markdown as the reader shows it, for a
// signed-in console user (any role: the token is checked by asking the
// Admin API who it is). Body: {"content": "..."}; answer: {"html": "..."}.
func (w *Web) preview(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	// Bodies are streamed (the API's server reads nothing a handler does
	// not ask for): a refusal before reading closes the connection, so the
	// unread rest is never taken for the next request.
	refuse := func(status int, msg string) error {
		c.Context().SetConnectionClose()
		return c.Status(status).JSON(fiber.Map{"code": status, "msg": msg})
	}
	if n := c.Request().Header.ContentLength(); n > previewMax {
		return refuse(http.StatusRequestEntityTooLarge, "the content is too large to preview")
	}
	auth := c.Get(fiber.HeaderAuthorization)
	if !strings.HasPrefix(auth, "Bearer ") {
		return refuse(http.StatusUnauthorized, "Not authenticated")
	}
	if status, msg := w.api.whoami(c, auth); status != http.StatusOK {
		return refuse(status, msg)
	}
	var r io.Reader = bytes.NewReader(c.Request().Body())
	if s := c.Context().RequestBodyStream(); s != nil {
		r = s
	}
	raw, err := io.ReadAll(io.LimitReader(r, previewMax+1))
	if err != nil || len(raw) > previewMax {
		return refuse(http.StatusRequestEntityTooLarge, "the content is too large to preview")
	}
	var in struct {
		Content string `json:"content"`
		Title   string `json:"title"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return c.Status(http.StatusBadRequest).JSON(fiber.Map{"code": 400, "msg": "the body must be {\"content\": \"...\"}"})
	}
	out := RenderMarkdown(dropTitle(in.Content, in.Title))
	return c.JSON(fiber.Map{"code": 0, "msg": "ok", "data": fiber.Map{"html": string(out)}})
}

// whoami asks the Admin API, in process, whether the bearer token auth is a
// signed-in user's: 200, or the API's status and message.
func (cl *client) whoami(c *fiber.Ctx, auth string) (int, string) {
	cl.once.Do(func() { cl.h = cl.app.Handler() })
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(http.MethodGet)
	req.SetRequestURI("/admin/api/v1/tenants/current")
	req.Header.SetHost(string(c.Request().Host()))
	req.Header.Set(fiber.HeaderAuthorization, auth)
	req.Header.Set(fiber.HeaderAccept, fiber.MIMEApplicationJSON)
	for _, h := range forwarded {
		if v := c.Request().Header.Peek(h); len(v) > 0 {
			req.Header.SetBytesV(h, v)
		}
	}
	var fctx fasthttp.RequestCtx
	fctx.Init(req, c.Context().RemoteAddr(), nil)
	cl.h(&fctx)
	status := fctx.Response.StatusCode()
	if status == http.StatusOK {
		return status, ""
	}
	var env envelope
	_ = json.Unmarshal(fctx.Response.Body(), &env)
	if env.Msg == "" {
		env.Msg = http.StatusText(status)
	}
	return status, env.Msg
}
