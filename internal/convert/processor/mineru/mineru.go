// Package mineru drives a MinerU API server: POST /tasks (multipart files,
// parse_method, return_md, return_images) answers 202 with a task_id,
// polled at /tasks/{id} and read from /tasks/{id}/result (results.<key>
// .md_content with images by name, linked as images/<name>).
package mineru

import (
	"context"
	"strconv"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/processor"
)

func init() {
	processor.Register(processor.MinerU, "Authorization", "Bearer ", func(c processor.Client) processor.Remote { return &Driver{c} })
}

// Driver is one configured MinerU server.
type Driver struct{ processor.Client }

// Name implements convert.Converter.
func (d *Driver) Name() string { return "mineru" }

// Formats implements convert.Converter.
func (d *Driver) Formats() []string { return []string{"pdf", "docx", "pptx", "png", "jpg", "jpeg"} }

// Health implements processor.Remote: GET /health must say healthy.
func (d *Driver) Health(ctx context.Context) (string, error) {
	var h struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}
	if err := d.Get(ctx, "/health", &h); err != nil {
		return "", err
	}
	if h.Status != "healthy" {
		return "", d.Failed("health status " + strconv.Quote(h.Status))
	}
	return h.Version, nil
}

// Convert implements convert.Converter.
func (d *Driver) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	method := "auto"
	if processor.Opt(in, "ocr_enabled", false) {
		method = "ocr"
	}
	images := processor.Opt(in, "extract_images", true)
	body, ct := processor.FileForm(map[string]string{"parse_method": method, "return_md": "true", "return_images": strconv.FormatBool(images),
		"table_enable": strconv.FormatBool(processor.Opt(in, "extract_tables", true))}, in)
	task, err := d.SubmitTask(ctx, "/tasks", body, ct)
	if err != nil {
		return nil, err
	}
	err = d.Wait(ctx, func() (bool, error) {
		var st struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if err := d.Get(ctx, "/tasks/"+task, &st); err != nil {
			return false, err
		}
		switch st.Status {
		case "done", "success", "completed":
			return true, nil
		case "failed", "error":
			return false, d.Failed(st.Error)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	var res struct {
		Results map[string]struct {
			MD     string            `json:"md_content"`
			Images map[string]string `json:"images"`
		} `json:"results"`
	}
	if err := d.Get(ctx, "/tasks/"+task+"/result", &res); err != nil {
		return nil, err
	}
	for _, r := range res.Results {
		if r.MD == "" {
			continue
		}
		byPath := map[string]string{}
		for name, enc := range r.Images {
			byPath["images/"+name] = enc
		}
		md, imgs := processor.LinkedImages(r.MD, byPath, images)
		return &convert.Result{Markdown: md, Images: imgs, Meta: map[string]any{"processor": d.Cfg.Name, "processor_type": processor.MinerU}}, nil
	}
	return nil, d.Failed("no Markdown in the result")
}
