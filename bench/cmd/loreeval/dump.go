package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/llm/extractive"
)

// dumpRecord is one asked question with what the responder saw: the search
// tool's passages, numbered as the answer cites them, and the file of each.
// loreeval -dump writes one per line, for calibrating the responder offline
// (the extractive package's thresholds) without reloading the corpora.
type dumpRecord struct {
	Set      string         `json:"set"`
	Lang     string         `json:"lang"`
	Question string         `json:"question"`
	File     string         `json:"file"` // relevant file; empty for an off-topic question
	Answer   string         `json:"answer"`
	Passages []dumpPassage  `json:"passages"`
	Files    map[int]string `json:"files"` // source number → file
}

// dumpPassage is one passage of the search tool's result.
type dumpPassage struct {
	SourceIndex int    `json:"source_index"`
	Title       string `json:"title"`
	Content     string `json:"content"`
	Metadata    struct {
		DocumentID int64   `json:"document_id"`
		Score      float64 `json:"score"`
	} `json:"metadata"`
}

// dumper appends records to the -dump file (nil: no dump).
type dumper struct {
	mu sync.Mutex
	f  *os.File
}

func newDumper(path string) (*dumper, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &dumper{f: f}, nil
}

// record fetches the tool result of the answer's search and writes it with
// the question.
func (d *dumper) record(ctx context.Context, api *client, s *corpusSite, set evalSet, q question, r chatReply) error {
	if d == nil {
		return nil
	}
	rec := dumpRecord{Set: set.name, Lang: s.def.lang, Question: q.q, File: q.file, Answer: r.text, Files: map[int]string{}}
	if r.threadID != "" && r.toolCall != "" {
		var tr struct {
			Content string `json:"content"`
		}
		path := "/v1/chat/sessions/" + url.PathEscape(r.threadID) + "/tool-result/" + url.PathEscape(r.toolCall)
		if err := api.Call(ctx, http.MethodGet, path, nil, &tr); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(tr.Content), &rec.Passages); err != nil {
			return fmt.Errorf("tool result of %q: %w", q.q, err)
		}
		for _, p := range rec.Passages {
			rec.Files[p.SourceIndex] = s.docFile[p.Metadata.DocumentID]
		}
	}
	b, _ := json.Marshal(rec)
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.f.Write(append(b, '\n'))
	return err
}

func (d *dumper) close() error {
	if d == nil {
		return nil
	}
	return d.f.Close()
}

// replay reads a -dump file and answers every question again with the
// extractive responder of this build over the passages its answer saw, then
// prints the answer figures: a responder change is measured in a second,
// without reloading the corpora (the passages are those of the dumped run).
func replay(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	figs := map[string]*answerFigures{}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec dumpRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name := rec.Set
		if name == "" {
			name = rec.Lang
		}
		a := figs[name]
		if a == nil {
			a = &answerFigures{set: name}
			figs[name] = a
			names = append(names, name)
		}
		start, stored := 1, storedSearch{}
		for i, p := range rec.Passages {
			if i == 0 {
				start = p.SourceIndex
			}
			stored.Passages = append(stored.Passages, storedPassage{DocumentID: p.Metadata.DocumentID, Title: p.Title,
				Score: p.Metadata.Score, Content: p.Content})
		}
		b, _ := json.Marshal(stored)
		text := extractive.Answer(rec.Question, activities.FormatToolResult(string(b), start))
		sources := map[int]string{}
		for n, f := range rec.Files {
			sources[n] = f
		}
		a.score(question{q: rec.Question, file: rec.File}, text, sources)
	}
	for _, n := range names {
		fmt.Println(figs[n].line())
	}
	return nil
}

// storedSearch is the shape the chat's search stores and
// activities.FormatToolResult renders.
type storedSearch struct {
	Passages []storedPassage `json:"passages"`
}

type storedPassage struct {
	DocumentID int64   `json:"document_id"`
	Title      string  `json:"title"`
	Score      float64 `json:"score"`
	Content    string  `json:"content"`
}
