package processor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/convert"
)

// Client is what the drivers share: the configured processor and the HTTP
// client that reaches it.
type Client struct {
	Cfg  Config
	HC   *http.Client
	Poll time.Duration // between status polls of an asynchronous task

	authHeader, authPrefix string // how the API key is sent
}

// NewClient builds a driver's client; the poll interval is config
// poll_interval_ms, default one second. The API key goes in the header
// authHeader as authPrefix+key ("Authorization", "Bearer ").
func NewClient(c Config, hc *http.Client, authHeader, authPrefix string) Client {
	poll := time.Second
	if v, ok := c.Config["poll_interval_ms"].(float64); ok && v >= 10 {
		poll = time.Duration(v) * time.Millisecond
	}
	return Client{Cfg: c, HC: hc, Poll: poll, authHeader: authHeader, authPrefix: authPrefix}
}

// Request builds a request for path with the driver's API key and, when
// contentType is set, that Content-Type (body may be nil).
func (c Client) Request(ctx context.Context, method, path string, body []byte, contentType string) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, method, c.URL(path), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	if c.Cfg.APIKey != "" {
		r.Header.Set(c.authHeader, c.authPrefix+c.Cfg.APIKey)
	}
	return r, nil
}

// Get sends a GET for path and decodes its JSON answer into out.
func (c Client) Get(ctx context.Context, path string, out any) error {
	r, err := c.Request(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return err
	}
	_, err = c.Do(r, out)
	return err
}

// SubmitTask posts a request body to path and returns the task_id with
// which an asynchronous service answers; an answer without one is a failure
// of this file.
func (c Client) SubmitTask(ctx context.Context, path string, body []byte, contentType string) (string, error) {
	r, err := c.Request(ctx, http.MethodPost, path, body, contentType)
	if err != nil {
		return "", err
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	if _, err := c.Do(r, &task); err != nil {
		return "", err
	}
	if task.TaskID == "" {
		return "", c.Failed("no task_id in the answer")
	}
	return task.TaskID, nil
}

// FileForm is a multipart form of the fields and one file part "files",
// with its Content-Type.
func FileForm(fields map[string]string, in convert.Input) ([]byte, string) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("files", in.Name)
	_, _ = fw.Write(in.Data)
	_ = mw.Close()
	return body.Bytes(), mw.FormDataContentType()
}

// URL is the base URL joined with a path.
func (c Client) URL(p string) string { return strings.TrimRight(c.Cfg.BaseURL, "/") + p }

// Do sends a request and decodes a JSON answer into out (when non-nil). A
// 4xx answer (other than 408 and 429) is a permanent failure of this file;
// 5xx, 408, 429 and network errors are worth retrying.
func (c Client) Do(req *http.Request, out any) (int, error) {
	res, err := c.HC.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s unreachable: %w", c.Cfg.Type, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return res.StatusCode, fmt.Errorf("%s: reading the answer: %w", c.Cfg.Type, err)
	}
	if res.StatusCode >= 300 {
		msg := fmt.Sprintf("%s answered %d: %.300s", c.Cfg.Type, res.StatusCode, strings.TrimSpace(string(body)))
		if res.StatusCode >= 400 && res.StatusCode < 500 && res.StatusCode != 408 && res.StatusCode != 429 {
			return res.StatusCode, fmt.Errorf("%w: %s", convert.ErrCorrupt, msg)
		}
		return res.StatusCode, errors.New(msg)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return res.StatusCode, fmt.Errorf("%s: an answer that is not the expected JSON: %v", c.Cfg.Type, err)
		}
	}
	return res.StatusCode, nil
}

// Failed is the permanent failure of a file the processor reported.
func (c Client) Failed(detail any) error {
	return fmt.Errorf("%w: %s could not convert it: %.300v", convert.ErrCorrupt, c.Cfg.Type, detail)
}

// Wait polls check every Poll until it reports done, fails, or ctx ends.
func (c Client) Wait(ctx context.Context, check func() (bool, error)) error {
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.Poll):
		}
	}
}

// Opt reads a boolean import option, with a default.
func Opt(in convert.Input, key string, def bool) bool {
	if v, ok := in.Options[key].(bool); ok {
		return v
	}
	return def
}

var dataImageRe = regexp.MustCompile(`!\[([^\]]*)\]\(data:(image/[a-zA-Z0-9.+-]+);base64,([A-Za-z0-9+/=\s]+)\)`)

// ExtractDataImages turns Markdown images embedded as data: URLs into
// images referenced by convert.ImageRef.
func ExtractDataImages(md string) (string, []convert.Image) {
	var imgs []convert.Image
	md = dataImageRe.ReplaceAllStringFunc(md, func(m string) string {
		sub := dataImageRe.FindStringSubmatch(m)
		data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(sub[3]), ""))
		if err != nil || len(data) == 0 {
			return ""
		}
		imgs = append(imgs, NamedImage(len(imgs)+1, sub[2], data))
		return "![" + sub[1] + "](" + convert.ImageRef(imgs[len(imgs)-1].Name) + ")"
	})
	return md, imgs
}

// NamedImage names the n-th image of a document by its content type.
func NamedImage(n int, contentType string, data []byte) convert.Image {
	ext := ".bin"
	if exts, _ := mime.ExtensionsByType(contentType); len(exts) > 0 {
		ext = exts[len(exts)-1]
	}
	return convert.Image{Name: "image" + strconv.Itoa(n) + ext, ContentType: contentType, Data: data}
}

// LinkedImages replaces links to the processor's image paths (Markdown
// images and <img> tags) with convert.ImageRef links, decoding each image
// from its base64 (or data: URL) form; links to images it did not return
// are dropped.
func LinkedImages(md string, byPath map[string]string, keep bool) (string, []convert.Image) {
	var imgs []convert.Image
	refs := map[string]string{}
	for p, enc := range byPath {
		if !keep {
			break
		}
		ct := mime.TypeByExtension(strings.ToLower(p[strings.LastIndex(p, "."):]))
		if m, rest, ok := strings.Cut(enc, ","); ok && strings.HasPrefix(m, "data:") {
			ct, enc = strings.TrimSuffix(strings.TrimPrefix(m, "data:"), ";base64"), rest
		}
		data, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(data) == 0 {
			continue
		}
		if ct == "" {
			ct = http.DetectContentType(data)
		}
		imgs = append(imgs, NamedImage(len(imgs)+1, ct, data))
		refs[p] = convert.ImageRef(imgs[len(imgs)-1].Name)
	}
	md = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)\)`).ReplaceAllStringFunc(md, func(m string) string {
		sub := regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)\)`).FindStringSubmatch(m)
		if r, ok := refs[sub[2]]; ok {
			return "![" + sub[1] + "](" + r + ")"
		}
		if _, known := byPath[sub[2]]; known || !strings.Contains(sub[2], "://") {
			return ""
		}
		return m
	})
	md = regexp.MustCompile(`<img\s+[^>]*src=["']([^"']+)["'][^>]*/?>`).ReplaceAllStringFunc(md, func(m string) string {
		src := regexp.MustCompile(`src=["']([^"']+)["']`).FindStringSubmatch(m)[1]
		if r, ok := refs[src]; ok {
			return "![](" + r + ")"
		}
		return ""
	})
	return md, imgs
}
