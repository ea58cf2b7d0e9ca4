package web

import (
	"strings"
	"testing"
)

func TestFileObject(t *testing.T) {
	for src, want := range map[string]string{
		"uploads/a.png":                                  "uploads/a.png",
		"files/uploads/a.png":                            "uploads/a.png",
		"/v1/files/uploads/a.png:download":               "uploads/a.png",
		"/api/v1/files/uploads/a%20b.png:download":       "uploads/a b.png",
		"https://lore.example/v1/files/x/y.jpg:download": "x/y.jpg",
		"/admin/api/v1/files/u/c.gif:download":           "u/c.gif",
		"https://images.example/a.png":                   "",
		"data:image/png;base64,AAAA":                     "",
		"javascript:alert(1)":                            "",
		"/etc/passwd":                                    "",
		"../secret.png":                                  "",
		"uploads/../../x.png":                            "",
		"uploads/a.png?x=1":                              "",
		"":                                               "",
	} {
		got, ok := FileObject(src)
		if got != want || ok != (want != "") {
			t.Errorf("FileObject(%q) = %q, %v; want %q", src, got, ok, want)
		}
	}
	if u := FileURL("uploads/a b#.png"); u != "/v1/files/uploads/a%20b%23.png:download" {
		t.Errorf("FileURL: %s", u)
	}
}

func TestRenderMarkdownKeepsSiblingsAfterReplacedImages(t *testing.T) {
	out := string(RenderMarkdown("![a](https://x.example/a.png) ![b](data:image/png;base64,AA) ![c](uploads/c.png) tail"))
	for _, want := range []string{`href="https://x.example/a.png"`, "[b]", `src="/v1/files/uploads/c.png:download"`, "tail"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q: %s", want, out)
		}
	}
	if strings.Contains(out, "data:") {
		t.Errorf("data URL kept: %s", out)
	}
}

func TestSnippet(t *testing.T) {
	src := "# Title\n\n" + strings.Repeat("filler words here. ", 40) + "The **needle** is here. " + strings.Repeat("more text. ", 40)
	s := Snippet(src, "needle", 80)
	if !strings.Contains(s, "needle") || strings.Contains(s, "**") || !strings.HasPrefix(s, "…") {
		t.Errorf("snippet: %q", s)
	}
	if s := Snippet("short [link](http://x) text", "", 80); s != "short link text" {
		t.Errorf("short snippet: %q", s)
	}
}

func TestDropTitle(t *testing.T) {
	if got := dropTitle("# Growing tomatoes\n\nWater them.", "Growing tomatoes"); strings.Contains(got, "#") || !strings.Contains(got, "Water") {
		t.Errorf("dropTitle: %q", got)
	}
	if got := dropTitle("# Install\n\nRun it.", "Installing Lore"); got != "# Install\n\nRun it." {
		t.Errorf("dropTitle kept another heading: %q", got)
	}
}
