package main

import (
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFirstLoadSumsWhatABrowserFetches serves a page with a stylesheet (and
// the image it names), an icon, a module (and the module it imports, once,
// though two files import it), an external script and a data: image, one
// file gzipped: the first load counts each same-origin file once, as served.
func TestFirstLoadSumsWhatABrowserFetches(t *testing.T) {
	files := map[string]struct{ ctype, body string }{
		"/p": {"text/html; charset=utf-8", `<!doctype html><link rel="stylesheet" href="/a/app.css"><link rel="icon" href='/a/i.svg'>
<script type="module" src="/a/app.js"></script><script src="https://cdn.example.com/x.js"></script>
<img src="data:image/png;base64,AAAA"><img alt=x src="/a/pic.png?v=1&amp;w=2">`},
		"/a/app.css": {"text/css", `body{background:url("bg.png")}`},
		"/a/bg.png":  {"image/png", strings.Repeat("b", 100)},
		"/a/i.svg":   {"image/svg+xml", "<svg/>"},
		"/a/app.js":  {"text/javascript", "import { a } from \"./chat.js\";\nimport \"./sse.js\";\na();"},
		"/a/chat.js": {"text/javascript", "import { r } from './sse.js';\nexport function a() { return import(\"./late.js\"); }"},
		"/a/sse.js":  {"text/javascript", "export const r = 1;"},
		"/a/late.js": {"text/javascript", "export {};"},
		"/a/pic.png": {"image/png", strings.Repeat("p", 50)},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a/pic.png" && r.URL.RawQuery != "v=1&w=2" {
			http.NotFound(w, r)
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", f.ctype)
		if r.URL.Path == "/a/chat.js" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write([]byte(f.body))
			_ = zw.Close()
			return
		}
		_, _ = w.Write([]byte(f.body))
	}))
	defer srv.Close()

	fl, err := (&bench{}).firstLoad(context.Background(), srv.URL+"/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(fl.files) != len(files) {
		t.Fatalf("fetched %d files, want %d: %v", len(fl.files), len(files), fl.files)
	}
	var want int64
	for p, f := range files {
		if p != "/a/chat.js" {
			want += int64(len(f.body))
		}
	}
	if fl.bytes <= want || fl.enc["gzip"] != 1 || fl.enc["uncompressed"] != len(files)-1 {
		t.Fatalf("first load %d bytes (%v), want %d plus chat.js gzipped", fl.bytes, fl.enc, want)
	}
}

// TestMatchMarksTimesEachChange: each change the queries saw is timed to the
// first stream event at or past it; the starting count is no change.
func TestMatchMarksTimesEachChange(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	queried := []progressMark{{0, at(0)}, {100, at(1000)}, {200, at(2000)}, {300, at(2100)}}
	streamed := []progressMark{{0, at(10)}, {100, at(1400)}, {300, at(2500)}}
	got := matchMarks(queried, streamed)
	want := []time.Duration{400 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond}
	if len(got) != len(want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
}
