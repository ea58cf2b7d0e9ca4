// Package docling drives Docling Serve: a file is submitted with
// POST /v1/convert/file/async, polled at /v1/status/poll/{task_id} and read
// from /v1/result/{task_id} (document.md_content); pictures come back
// embedded as data: URLs and are extracted as images.
package docling

import (
	"context"
	"strconv"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/processor"
)

func init() {
	processor.Register(processor.Docling, "X-Api-Key", "", func(c processor.Client) processor.Remote { return &Driver{c} })
}

// Driver is one configured Docling Serve.
type Driver struct{ processor.Client }

// Name implements convert.Converter.
func (d *Driver) Name() string { return "docling" }

// Formats implements convert.Converter.
func (d *Driver) Formats() []string {
	return []string{"pdf", "docx", "pptx", "xlsx", "html", "htm", "md", "csv", "png", "jpg", "jpeg"}
}

// Health implements processor.Remote: GET /health, version from /version.
func (d *Driver) Health(ctx context.Context) (string, error) {
	if err := d.Get(ctx, "/health", nil); err != nil {
		return "", err
	}
	var v map[string]any
	if err := d.Get(ctx, "/version", &v); err == nil {
		if s, ok := v["docling-serve"].(string); ok {
			return s, nil
		}
	}
	return "", nil
}

// Convert implements convert.Converter.
func (d *Driver) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	images := processor.Opt(in, "extract_images", true)
	mode := "placeholder"
	if images {
		mode = "embedded"
	}
	body, ct := processor.FileForm(map[string]string{"to_formats": "md", "image_export_mode": mode,
		"do_ocr":             strconv.FormatBool(processor.Opt(in, "ocr_enabled", false)),
		"do_table_structure": strconv.FormatBool(processor.Opt(in, "extract_tables", true)), "abort_on_error": "false"}, in)
	task, err := d.SubmitTask(ctx, "/v1/convert/file/async", body, ct)
	if err != nil {
		return nil, err
	}
	err = d.Wait(ctx, func() (bool, error) {
		var st struct {
			Status string `json:"task_status"`
		}
		if err := d.Get(ctx, "/v1/status/poll/"+task, &st); err != nil {
			return false, err
		}
		switch st.Status {
		case "success":
			return true, nil
		case "failure", "error":
			return false, d.Failed("task " + task + " failed")
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	var res struct {
		Document struct {
			MD string `json:"md_content"`
		} `json:"document"`
		Status string `json:"status"`
	}
	if err := d.Get(ctx, "/v1/result/"+task, &res); err != nil {
		return nil, err
	}
	if res.Document.MD == "" {
		return nil, d.Failed("empty Markdown")
	}
	md, imgs := processor.ExtractDataImages(res.Document.MD)
	return &convert.Result{Markdown: md, Images: imgs, Meta: map[string]any{"processor": d.Cfg.Name, "processor_type": processor.Docling}}, nil
}
