package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lorekb/lore/internal/convert"
	lorehtml "github.com/lorekb/lore/internal/convert/html"
)

// customQuestion is one line of a -questions file.
type customQuestion struct {
	Q          string `json:"q"`
	File       string `json:"file"`    // the relevant file, relative to -corpus ("" with off_topic)
	Section    string `json:"section"` // optional: the heading that answers
	OffTopic   bool   `json:"off_topic"`
	Paraphrase bool   `json:"paraphrase"`
}

// useCustomCorpus replaces the built-in corpora with the Markdown and HTML
// files under dir and the questions of the JSON-lines file questions, so a
// site's own documents and its readers' questions are measured the same
// way (BM25 beside Lore, the targets table).
func useCustomCorpus(dir, questions, lang string) error {
	raw, err := os.ReadFile(questions)
	if err != nil {
		return err
	}
	def := corpusDef{name: filepath.Base(filepath.Clean(dir)), lang: lang}
	if err := def.parseQuestions(questions, raw); err != nil {
		return err
	}
	def.fetch = func(context.Context, string) ([]file, string, error) {
		files, err := readCorpusDir(dir)
		return files, "files under " + dir, err
	}
	corpusDefs = []corpusDef{def}
	return nil
}

// readCorpusDir loads every .md and .html file under dir as one document
// (HTML converted to Markdown by Lore's own converter, as an import would),
// titled by its first heading or its name.
func readCorpusDir(dir string) ([]file, error) {
	var files []file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ext := strings.ToLower(filepath.Ext(p))
		if ext != ".md" && ext != ".markdown" && ext != ".html" && ext != ".htm" {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		text, title := strings.ToValidUTF8(string(raw), "\uFFFD"), ""
		if ext == ".html" || ext == ".htm" {
			res, err := lorehtml.Converter{}.Convert(context.Background(), convert.Input{Name: filepath.Base(p), Data: []byte(text)})
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			title, text = res.Title, res.Markdown
		}
		if title == "" {
			title = anyHeading(text, strings.TrimSuffix(filepath.Base(p), ext))
		}
		files = append(files, file{rel: rel, title: title, text: text})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no .md or .html files under %s", dir)
	}
	return files, err
}

// parseQuestions adds the questions of a JSON-lines file (customQuestion
// per line; blank lines and lines starting with # are skipped) to d.
func (d *corpusDef) parseQuestions(name string, raw []byte) error {
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var cq customQuestion
		if err := json.Unmarshal([]byte(line), &cq); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if cq.Q == "" || (cq.File == "" && !cq.OffTopic) {
			return fmt.Errorf("%s:%d: a question needs q and file (or off_topic)", name, n)
		}
		q := question{q: cq.Q, file: cq.File, section: cq.Section}
		switch {
		case cq.OffTopic:
			d.offTopic = append(d.offTopic, question{q: cq.Q})
		case cq.Paraphrase:
			d.paraphrase = append(d.paraphrase, q)
		default:
			d.questions = append(d.questions, q)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(d.questions)+len(d.paraphrase) == 0 {
		return fmt.Errorf("%s: no answerable questions", name)
	}
	return nil
}
