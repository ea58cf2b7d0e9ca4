package api

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
)

// Envelope is the body of every enveloped response: code 0 on success, the
// HTTP status on error.
type Envelope struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data any    `json:"data"`
}

// Pagination describes one page of a list (WIRE.md §1).
type Pagination struct {
	IsPager int `json:"is_pager"`
	Page    int `json:"page"`
	Size    int `json:"size"`
	Total   int `json:"total"`
}

// Page is the data of a paginated list.
type Page[T any] struct {
	List       []T        `json:"list"`
	Pagination Pagination `json:"pagination"`
}

// ok writes a 200 success envelope.
func ok(c *fiber.Ctx, data any) error {
	return c.JSON(Envelope{Code: 0, Msg: msgSuccess(c), Data: data})
}

// created writes a 201 success envelope.
func created(c *fiber.Ctx, data any) error {
	c.Status(http.StatusCreated)
	return c.JSON(Envelope{Code: 0, Msg: msgSuccess(c), Data: data})
}

// Message is the data of operations that only confirm.
type Message struct {
	Message string `json:"message"`
}

func msgSuccess(c *fiber.Ctx) string {
	if lang := c.Get("Accept-Language"); len(lang) >= 2 && lang[:2] == "zh" {
		return "成功"
	}
	return "Success"
}
