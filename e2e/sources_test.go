package e2e

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// citedRe finds "<sentence> [n]" in an extractive answer.
var citedRe = regexp.MustCompile(`([^\[\]]+?)\s*\[(\d+)\]`)

// numberedSource is one entry of an answer's sources.
type numberedSource struct {
	DocumentID  int64 `json:"documentId"`
	SourceIndex int   `json:"sourceIndex"`
}

// checkCitations fails unless every [n] of text is among sources and the
// sentence quoted before it comes from that source's document.
func checkCitations(t *testing.T, what, text string, sources []numberedSource, docs map[int64]string) []int {
	t.Helper()
	byIndex := map[int]int64{}
	for _, s := range sources {
		byIndex[s.SourceIndex] = s.DocumentID
	}
	var cited []int
	for _, m := range citedRe.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[2])
		doc, ok := byIndex[n]
		if !ok {
			t.Fatalf("%s cites [%d], which its sources %+v do not list: %q", what, n, sources, text)
		}
		if quote := strings.TrimSpace(m[1]); !strings.Contains(docs[doc], quote) {
			t.Fatalf("%s: [%d] resolves to document %d, which does not say %q", what, n, doc, quote)
		}
		cited = append(cited, n)
	}
	if len(cited) == 0 {
		t.Fatalf("%s cites nothing: %q", what, text)
	}
	return cited
}

// TestSourceNumbersOfNonStreamTurns: answers that are not streamed carry
// the numbered sources they cite, and each turn of a thread numbers its
// passages from 1, as the reference does (its client lists an answer's
// sources 1, 2, …), so an [n] of the second answer resolves to the document
// it quotes, in the answer's own sources and in the stored history.
func TestSourceNumbersOfNonStreamTurns(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Numbering")
	contents := []string{
		"# Backups\n\nRun lore backup to write the database to a backup file.",
		"# Restoring\n\nTo restore the database from a backup, run lore restore with the backup file.",
		"# Backup schedule\n\nA backup of the database is taken every night at two.",
		"# Backup storage\n\nBackup files are kept for thirty days in the database backup folder.",
		"# Backup encryption\n\nEvery backup of the database is encrypted with the site key.",
		"# Backup alerts\n\nAn email is sent when a database backup fails.",
	}
	docs := map[int64]string{}
	var ids []int64
	for i, c := range contents {
		id := a.newDoc(site, "Backup guide "+strconv.Itoa(i+1), c, "published")
		docs[id] = c
		ids = append(ids, id)
	}
	for _, id := range ids {
		a.waitStatus(id, "completed")
	}

	type responseObject struct {
		ID     string `json:"id"`
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Sources []numberedSource `json:"sources"`
	}
	ask := func(input, thread string) responseObject {
		t.Helper()
		body := map[string]any{"input": input, "stream": false, "user": "m1", "filter": map[string]any{"site_id": site}}
		if thread != "" {
			body["previous_response_id"] = thread
		}
		r := a.do("POST", "/v1/chat/responses", body, "")
		var obj responseObject
		if r.Status != 200 || json.Unmarshal(r.Raw, &obj) != nil || len(obj.Output) != 1 || len(obj.Output[0].Content) != 1 {
			t.Fatalf("stream=false %q: %d %s", input, r.Status, r.Raw)
		}
		return obj
	}

	first := ask("How is a database backup encrypted?", "")
	checkCitations(t, "first answer", first.Output[0].Content[0].Text, first.Sources, docs)
	last := 0
	for _, s := range first.Sources {
		last = max(last, s.SourceIndex)
	}
	if last < 5 {
		t.Fatalf("the first search should return five passages (RAG_RERANK_TOP_K), sources %+v", first.Sources)
	}

	second := ask("How do I restore the database from a backup?", first.ID)
	text := second.Output[0].Content[0].Text
	lowest := 0
	for _, s := range second.Sources {
		if lowest == 0 || s.SourceIndex < lowest {
			lowest = s.SourceIndex
		}
	}
	if lowest != 1 {
		t.Fatalf("second turn numbers from %d, want 1: %+v", lowest, second.Sources)
	}
	checkCitations(t, "second answer", text, second.Sources, docs)
	if !strings.Contains(text, "run lore restore with the backup file") {
		t.Fatalf("second answer does not quote the restore page: %q", text)
	}

	// The stored history carries each answer with the sources it cites.
	r := a.do("GET", "/v1/chat/sessions/"+first.ID+"/messages?member_id=m1", nil, "")
	var hist struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content string           `json:"content"`
			Sources []numberedSource `json:"sources"`
		} `json:"messages"`
	}
	eventually(t, 30*time.Second, "both answers stored", func() bool {
		r = a.do("GET", "/v1/chat/sessions/"+first.ID+"/messages?member_id=m1", nil, "")
		hist.Messages = nil
		if r.Status != 200 || json.Unmarshal(r.Data, &hist) != nil {
			return false
		}
		n := 0
		for _, m := range hist.Messages {
			if m.Role == "assistant" && m.Content != "" {
				n++
			}
		}
		return n == 2
	})
	var answers []string
	for _, m := range hist.Messages {
		if m.Role == "assistant" && m.Content != "" {
			checkCitations(t, "stored answer", m.Content, m.Sources, docs)
			answers = append(answers, m.Content)
		}
	}
	if answers[1] != text {
		t.Fatalf("stored second answer %q, returned %q", answers[1], text)
	}

	// A non-stream chat completion carries its sources too.
	cr := a.do("POST", "/v1/chat/completions", map[string]any{"model": "lore", "filter": map[string]any{"site_id": site},
		"messages": []map[string]any{{"role": "user", "content": "How do I restore the database from a backup?"}}}, "")
	var comp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Sources []numberedSource `json:"sources"`
	}
	if cr.Status != 200 || json.Unmarshal(cr.Raw, &comp) != nil || len(comp.Choices) != 1 {
		t.Fatalf("non-stream completion: %d %s", cr.Status, cr.Raw)
	}
	checkCitations(t, "chat completion", comp.Choices[0].Message.Content, comp.Sources, docs)
}
