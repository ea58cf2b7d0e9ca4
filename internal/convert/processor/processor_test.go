package processor_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/builtin"
	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/processor"
	_ "github.com/lorekb/lore/internal/convert/processor/drivers"
)

// fake is a remote document processor in the test: it converts with the
// built-in converters and answers in the shape of the processor type
// (Docling Serve, MinerU, PaddleOCR), so the conformance suite runs over
// the real driver code and HTTP.
type fake struct {
	typ   string
	key   string
	mu    sync.Mutex
	tasks map[string]*convert.Result
	fails map[string]string
	n     int
	down  bool // answer 503 to everything
}

func (f *fake) convert(name string, data []byte) (*convert.Result, error) {
	return builtin.Registry().Convert(context.Background(), convert.Input{Name: name, Data: data})
}

func (f *fake) task(res *convert.Result, err error) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := "t" + strings.Repeat("x", f.n%3) + string(rune('a'+f.n%26))
	if err != nil {
		f.fails[id] = err.Error()
	} else {
		f.tasks[id] = res
	}
	return id
}

// inline puts images back as the processor would return them.
func inline(res *convert.Result, ref func(img convert.Image) string) string {
	md := res.Markdown
	for _, img := range res.Images {
		md = strings.ReplaceAll(md, convert.ImageRef(img.Name), ref(img))
	}
	return md
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.down {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
		return
	}
	if f.key != "" && r.Header.Get("X-Api-Key") != f.key {
		http.Error(w, `{"detail":"bad key"}`, http.StatusUnauthorized)
		return
	}
	js := func(v any) { w.Header().Set("Content-Type", "application/json"); _ = json.NewEncoder(w).Encode(v) }
	file := func() (string, []byte) {
		fh, hdr, err := r.FormFile("files")
		if err != nil {
			return "", nil
		}
		b, _ := io.ReadAll(fh)
		return hdr.Filename, b
	}
	path := r.URL.Path
	switch {
	case path == "/health" && f.typ == processor.Docling:
		js(map[string]string{"status": "ok"})
	case path == "/version":
		js(map[string]string{"docling-serve": "1.5.0"})
	case path == "/health" && f.typ == processor.MinerU:
		js(map[string]string{"status": "healthy", "version": "2.1.0"})
	case path == "/health":
		js(map[string]any{"errorCode": 0, "errorMsg": "Healthy"})
	case path == "/v1/convert/file/async" || (path == "/tasks" && r.Method == http.MethodPost):
		name, data := file()
		res, err := f.convert(name, data)
		if f.typ == processor.MinerU {
			w.WriteHeader(202)
		}
		js(map[string]string{"task_id": f.task(res, err)})
	case strings.HasPrefix(path, "/v1/status/poll/"):
		id := strings.TrimPrefix(path, "/v1/status/poll/")
		st := "success"
		if _, bad := f.fails[id]; bad {
			st = "failure"
		}
		js(map[string]string{"task_id": id, "task_status": st})
	case strings.HasPrefix(path, "/v1/result/"):
		res := f.tasks[strings.TrimPrefix(path, "/v1/result/")]
		md := inline(res, func(img convert.Image) string {
			return "data:" + img.ContentType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
		})
		js(map[string]any{"document": map[string]any{"md_content": md}, "status": "success"})
	case strings.HasPrefix(path, "/tasks/") && strings.HasSuffix(path, "/result"):
		res := f.tasks[strings.TrimSuffix(strings.TrimPrefix(path, "/tasks/"), "/result")]
		imgs := map[string]string{}
		md := inline(res, func(img convert.Image) string {
			imgs[img.Name] = base64.StdEncoding.EncodeToString(img.Data)
			return "images/" + img.Name
		})
		js(map[string]any{"results": map[string]any{"h1": map[string]any{"md_content": md, "images": imgs}}})
	case strings.HasPrefix(path, "/tasks/"):
		id := strings.TrimPrefix(path, "/tasks/")
		if msg, bad := f.fails[id]; bad {
			js(map[string]string{"status": "failed", "error": msg})
			return
		}
		js(map[string]string{"status": "done"})
	case path == "/layout-parsing":
		var in struct {
			File     string `json:"file"`
			FileType int    `json:"fileType"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		data, _ := base64.StdEncoding.DecodeString(in.File)
		name := "page.pdf"
		if in.FileType == 1 {
			name = "page.png"
		}
		res, err := f.convert(name, data)
		if err != nil {
			js(map[string]any{"errorCode": 500, "errorMsg": err.Error()})
			return
		}
		imgs := map[string]string{}
		md := inline(res, func(img convert.Image) string {
			imgs["imgs/"+img.Name] = base64.StdEncoding.EncodeToString(img.Data)
			return "imgs/" + img.Name
		})
		js(map[string]any{"errorCode": 0, "logId": "log-1", "result": map[string]any{
			"layoutParsingResults": []any{map[string]any{"markdown": map[string]any{"text": md, "images": imgs}}}}})
	default:
		http.NotFound(w, r)
	}
}

func serve(t *testing.T, typ, key string) (*fake, processor.Remote) {
	f := &fake{typ: typ, key: key, tasks: map[string]*convert.Result{}, fails: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := processor.Config{ID: "p1", Name: typ + " test", Type: typ, BaseURL: srv.URL + "/", APIKey: key, Enabled: true,
		Config: map[string]any{"poll_interval_ms": float64(10)}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := processor.New(cfg, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return f, d
}

// TestConformance runs the one conformance suite over each driver against
// its fake server.
func TestConformance(t *testing.T) {
	for _, typ := range processor.Types {
		t.Run(typ, func(t *testing.T) {
			key := ""
			if typ == processor.Docling {
				key = "docling-key-123"
			}
			_, d := serve(t, typ, key)
			converttest.Run(t, d, converttest.Options{AnyPermanent: true, NoMetaTitles: true})
		})
	}
}

// TestHealthAndFailures: health reports the version; a wrong key and a
// service that is down are errors, the latter worth retrying (not a named
// failure), so an import retries it instead of failing the file.
func TestHealthAndFailures(t *testing.T) {
	versions := map[string]string{processor.Docling: "1.5.0", processor.MinerU: "2.1.0", processor.PaddleOCR: ""}
	for _, typ := range processor.Types {
		f, d := serve(t, typ, "")
		v, err := d.Health(context.Background())
		if err != nil || v != versions[typ] {
			t.Fatalf("%s health: %q %v", typ, v, err)
		}
		f.down = true
		if _, err := d.Health(context.Background()); err == nil {
			t.Fatalf("%s: a 503 passed the health check", typ)
		}
		_, err = convert.Run(context.Background(), d, convert.Input{Name: "report.pdf", Data: converttest.PDF("")})
		if err == nil || convert.Permanent(err) {
			t.Fatalf("%s down: %v, want a retryable error", typ, err)
		}
	}
	_, d := serve(t, processor.Docling, "right-key-123")
	cfg := processor.Config{Name: "x", Type: processor.Docling, BaseURL: "http://127.0.0.1:1", APIKey: "k"}
	if _, err := processor.New(processor.Config{Type: "Nope"}, nil); !errors.Is(err, processor.ErrUnknown) {
		t.Fatalf("unknown type: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (processor.Config{Name: "x", Type: processor.Docling, BaseURL: "file:///etc/passwd"}).Validate(); err == nil {
		t.Fatal("a file: URL passed validation")
	}
	_ = d
}
