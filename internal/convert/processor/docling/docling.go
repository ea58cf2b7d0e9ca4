// Package docling drives Docling Serve: a file is submitted with
// POST /v1/convert/file/async, polled at /v1/status/poll/{task_id} and read
// from /v1/result/{task_id} (document.md_content); pictures come back
// embedded as data: URLs and are extracted as images.
package docling

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/processor"
)

func init() {
	processor.Drivers[processor.Docling] = func(c processor.Config, hc *http.Client) processor.Remote {
		return &Driver{processor.NewClient(c, hc)}
	}
}

// Driver is one configured Docling Serve.
type Driver struct{ processor.Client }

// Name implements convert.Converter.
func (d *Driver) Name() string { return "docling" }

// Formats implements convert.Converter.
func (d *Driver) Formats() []string {
	return []string{"pdf", "docx", "pptx", "xlsx", "html", "htm", "md", "csv", "png", "jpg", "jpeg"}
}

func (d *Driver) req(ctx context.Context, method, path string, body *bytes.Buffer, ct string) (*http.Request, error) {
	var r *http.Request
	var err error
	if body != nil {
		r, err = http.NewRequestWithContext(ctx, method, d.URL(path), body)
	} else {
		r, err = http.NewRequestWithContext(ctx, method, d.URL(path), nil)
	}
	if err != nil {
		return nil, err
	}
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	if d.Cfg.APIKey != "" {
		r.Header.Set("X-Api-Key", d.Cfg.APIKey)
	}
	return r, nil
}

// Health implements processor.Remote: GET /health, version from /version.
func (d *Driver) Health(ctx context.Context) (string, error) {
	r, err := d.req(ctx, http.MethodGet, "/health", nil, "")
	if err != nil {
		return "", err
	}
	if _, err := d.Do(r, nil); err != nil {
		return "", err
	}
	var v map[string]any
	if r, err = d.req(ctx, http.MethodGet, "/version", nil, ""); err == nil {
		if _, err := d.Do(r, &v); err == nil {
			if s, ok := v["docling-serve"].(string); ok {
				return s, nil
			}
		}
	}
	return "", nil
}

// Convert implements convert.Converter.
func (d *Driver) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	images := processor.Opt(in, "extract_images", true)
	mode := "placeholder"
	if images {
		mode = "embedded"
	}
	for k, v := range map[string]string{"to_formats": "md", "image_export_mode": mode,
		"do_ocr":             strconv.FormatBool(processor.Opt(in, "ocr_enabled", false)),
		"do_table_structure": strconv.FormatBool(processor.Opt(in, "extract_tables", true)), "abort_on_error": "false"} {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("files", in.Name)
	_, _ = fw.Write(in.Data)
	_ = mw.Close()
	r, err := d.req(ctx, http.MethodPost, "/v1/convert/file/async", &body, mw.FormDataContentType())
	if err != nil {
		return nil, err
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	if _, err := d.Do(r, &task); err != nil {
		return nil, err
	}
	if task.TaskID == "" {
		return nil, d.Failed("no task_id in the answer")
	}
	err = d.Wait(ctx, func() (bool, error) {
		r, err := d.req(ctx, http.MethodGet, "/v1/status/poll/"+task.TaskID, nil, "")
		if err != nil {
			return false, err
		}
		var st struct {
			Status string `json:"task_status"`
		}
		if _, err := d.Do(r, &st); err != nil {
			return false, err
		}
		switch st.Status {
		case "success":
			return true, nil
		case "failure", "error":
			return false, d.Failed("task " + task.TaskID + " failed")
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	r, err = d.req(ctx, http.MethodGet, "/v1/result/"+task.TaskID, nil, "")
	if err != nil {
		return nil, err
	}
	var res struct {
		Document struct {
			MD string `json:"md_content"`
		} `json:"document"`
		Status string `json:"status"`
	}
	if _, err := d.Do(r, &res); err != nil {
		return nil, err
	}
	if res.Document.MD == "" {
		return nil, d.Failed("empty Markdown")
	}
	md, imgs := processor.ExtractDataImages(res.Document.MD)
	return &convert.Result{Markdown: md, Images: imgs, Meta: map[string]any{"processor": d.Cfg.Name, "processor_type": processor.Docling}}, nil
}
