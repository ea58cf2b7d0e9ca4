package api

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// FuzzDecoders feeds arbitrary bodies and query strings to the request
// decoders: they must never panic and must answer either success or a 4xx
// named error.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{`{"input":"hi","filter":{"site_id":1}}`, `{"input":[{"role":"user","content":"x"}]}`,
		`{"title":"t","site_id":1,"tags":["a"]}`, `{"email":"a@b.c","password":"12345678","name":"n"}`, `[]`, `{`, `{"a":1e999}`,
		"{\"title\":\"\\u0000\"}", `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`} {
		f.Add([]byte(s), "page=1&size=10&keyword=x")
	}
	app := fiber.New()
	check := func(err error) {
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) || e.Status < 400 || e.Status >= 500 {
			panic("decoder returned a non-4xx error: " + err.Error())
		}
	}
	app.Post("/", func(c *fiber.Ctx) error {
		var r ResponsesRequest
		if err := bindJSON(c, &r); err == nil {
			_, _, _, perr := parseInput(r.Input)
			check(perr)
		} else {
			check(err)
		}
		var cc ChatCompletionRequest
		check(bindJSON(c, &cc))
		var uc UserCreate
		check(bindJSON(c, &uc))
		var uq UserListQuery
		check(bindQuery(c, &uq))
		return nil
	})
	f.Fuzz(func(t *testing.T, body []byte, query string) {
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		req.URL.RawQuery = query
		if _, err := app.Test(req, -1); err != nil {
			t.Fatal(err)
		}
	})
}
