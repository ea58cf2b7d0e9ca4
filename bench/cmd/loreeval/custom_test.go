package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCustomCorpus(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "guide"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "guide", "install.md"), []byte("# Installing\n\nRun make run.\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "backup.html"), []byte("<html><head><title>Backups</title></head><body><h1>Backups</h1><p>Copy the data folder.</p></body></html>"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a document"), 0o644))
	qs := filepath.Join(t.TempDir(), "q.jsonl")
	must(os.WriteFile(qs, []byte(`# my site's questions
{"q": "How do I set it up?", "file": "guide/install.md"}
{"q": "How do I keep a copy of my data?", "file": "backup.html", "paraphrase": true}
{"q": "What is the capital of France?", "off_topic": true}
`), 0o644))
	saved := corpusDefs
	defer func() { corpusDefs = saved }()
	must(useCustomCorpus(dir, qs, "English"))
	if len(corpusDefs) != 1 {
		t.Fatalf("corpora %d, want only the custom one", len(corpusDefs))
	}
	d := corpusDefs[0]
	if len(d.questions) != 1 || len(d.paraphrase) != 1 || len(d.offTopic) != 1 || d.lang != "English" {
		t.Fatalf("def %+v", d)
	}
	files, _, err := d.fetch(nil, "")
	must(err)
	if len(files) != 2 || files[0].rel != "backup.html" || files[0].title != "Backups" || files[1].rel != "guide/install.md" || files[1].title != "Installing" {
		t.Fatalf("files %+v", files)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	must(os.WriteFile(bad, []byte(`{"q": "no file"}`), 0o644))
	if err := useCustomCorpus(dir, bad, "English"); err == nil {
		t.Fatal("a question without its file was accepted")
	}
}
