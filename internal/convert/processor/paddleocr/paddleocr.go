// Package paddleocr drives a PaddleOCR(-VL) layout-parsing service:
// POST /layout-parsing with the file in base64 (fileType 0 for PDF, 1 for an
// image) answers errorCode 0 and one Markdown text per page, with the
// page's pictures by path.
package paddleocr

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/processor"
)

func init() {
	processor.Register(processor.PaddleOCR, "Authorization", "token ", func(c processor.Client) processor.Remote { return &Driver{c} })
}

// Driver is one configured PaddleOCR service.
type Driver struct{ processor.Client }

// Name implements convert.Converter.
func (d *Driver) Name() string { return "paddleocr" }

// Formats implements convert.Converter: PDFs and pictures.
func (d *Driver) Formats() []string { return []string{"pdf", "png", "jpg", "jpeg"} }

type answer struct {
	ErrorCode int    `json:"errorCode"`
	ErrorMsg  string `json:"errorMsg"`
	LogID     string `json:"logId"`
	Result    struct {
		Pages []struct {
			Markdown struct {
				Text   string            `json:"text"`
				Images map[string]string `json:"images"`
			} `json:"markdown"`
		} `json:"layoutParsingResults"`
	} `json:"result"`
}

func (d *Driver) call(ctx context.Context, method, path string, body []byte, out *answer) error {
	r, err := d.Request(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	if _, err := d.Do(r, out); err != nil {
		return err
	}
	if out.ErrorCode != 0 {
		return d.Failed(out.ErrorMsg)
	}
	return nil
}

// Health implements processor.Remote: GET /health must answer errorCode 0.
func (d *Driver) Health(ctx context.Context) (string, error) {
	var a answer
	return "", d.call(ctx, http.MethodGet, "/health", nil, &a)
}

// Convert implements convert.Converter.
func (d *Driver) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	fileType := 1
	if in.Ext() == "pdf" {
		fileType = 0
	}
	body, _ := json.Marshal(map[string]any{"file": base64.StdEncoding.EncodeToString(in.Data), "fileType": fileType,
		"useLayoutDetection": true, "prettifyMarkdown": true, "mergeTables": processor.Opt(in, "extract_tables", true),
		"relevelTitles": true})
	var a answer
	if err := d.call(ctx, http.MethodPost, "/layout-parsing", body, &a); err != nil {
		return nil, err
	}
	var md bytes.Buffer
	byPath := map[string]string{}
	for _, p := range a.Result.Pages {
		md.WriteString(p.Markdown.Text + "\n\n")
		for k, v := range p.Markdown.Images {
			byPath[k] = v
		}
	}
	if md.Len() <= len(a.Result.Pages)*2 {
		return nil, d.Failed("no text in the answer")
	}
	text, imgs := processor.LinkedImages(md.String(), byPath, processor.Opt(in, "extract_images", true))
	return &convert.Result{Markdown: text, Images: imgs, Meta: map[string]any{"processor": d.Cfg.Name,
		"processor_type": processor.PaddleOCR, "log_id": a.LogID, "pages": len(a.Result.Pages)}}, nil
}
