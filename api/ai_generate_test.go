package api

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lorekb/lore/models"
)

const aiGenPath = adminPath + "/documents:aiGenerate"

const aiGenDoc = `---
title: Backup and Restore Guide
---
# Backups

Lore keeps every site in one database. A nightly backup copies the database and the object store to another disk. Restoring a backup brings back sites, documents and files.

## Restoring a backup

Stop the worker first. Then run the restore command with the backup file.

` + "```sh\nlore restore --from /backups/nightly.tar\n```" + `

- Restores replace the current database.
- Check the restored sites in the admin UI.
`

// The extractive default: leading sentences within the limit, salient terms
// spelled as the text spells them, the front matter title; no model called.
func TestAIGenerateExtractive(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var out AIGenerateResponse
	h.must(200, "POST", aiGenPath, map[string]any{"content": aiGenDoc, "fields": []string{"summary", "tags", "title"},
		"summary_max_length": 60, "tags_max_count": 4}, h.admin).into(t, &out)
	if out.Generator != "extractive" || out.Summary == nil || out.Title == nil {
		t.Fatalf("%+v", out)
	}
	if *out.Summary != "Lore keeps every site in one database." {
		t.Errorf("summary %q: want the first sentence (the second does not fit in 60)", *out.Summary)
	}
	if *out.Title != "Backup and Restore Guide" {
		t.Errorf("title %q", *out.Title)
	}
	if len(out.Tags) != 4 || out.Tags[0] != "backup" || out.Tags[1] != "restore" {
		t.Errorf("tags %q: want backup then restore (title and headings weigh most; restore spelled as the text spells it most)", out.Tags)
	}
	for _, tag := range out.Tags {
		if tag == "restor" || tag == "nightly.tar" || strings.Contains(tag, "lore restore") {
			t.Errorf("tag %q: a stem or code", tag)
		}
	}

	// Only what is asked is answered; the reference's limits.
	h.must(200, "POST", aiGenPath, map[string]any{"content": aiGenDoc, "fields": []string{"tags"}}, h.admin).into(t, &out)
	if out.Summary != nil || out.Title != nil || len(out.Tags) == 0 || len(out.Tags) > 8 {
		t.Errorf("tags only: %+v", out)
	}
	h.must(200, "POST", aiGenPath, map[string]any{"content": aiGenDoc, "fields": []string{"summary"}, "summary_max_length": 2000}, h.admin).into(t, &out)
	if !strings.HasPrefix(*out.Summary, "Lore keeps every site in one database. A nightly backup") ||
		!strings.Contains(*out.Summary, "Then run the restore command with the backup file.") || strings.Contains(*out.Summary, "```") ||
		strings.Contains(*out.Summary, "#") || out.Tags != nil {
		t.Errorf("long summary %q", *out.Summary)
	}

	// Chinese: sentences end at 。 and the terms come from the segmenter.
	zh := "# 向量检索\n\n向量检索把文档切成片段并计算向量。检索时先召回候选片段，再用重排序模型排序。\n\n## 重排序\n\n重排序模型提高检索的准确率。"
	h.must(200, "POST", aiGenPath, map[string]any{"content": zh, "fields": []string{"summary", "tags"}, "summary_max_length": 30}, h.admin).into(t, &out)
	if *out.Summary != "向量检索把文档切成片段并计算向量。" || !contains(out.Tags, "检索") && !contains(out.Tags, "向量") {
		t.Errorf("chinese: summary %q tags %q", *out.Summary, out.Tags)
	}
	// A first sentence longer than the limit is cut with an ellipsis.
	long := strings.Repeat("word ", 100) + "end."
	h.must(200, "POST", aiGenPath, map[string]any{"content": long, "fields": []string{"summary"}, "summary_max_length": 20}, h.admin).into(t, &out)
	if n := utf8.RuneCountInString(*out.Summary); n > 20 || !strings.HasSuffix(*out.Summary, "…") {
		t.Errorf("cut summary %q (%d runes)", *out.Summary, n)
	}

	// Any editor may use it; bad input is a 4xx.
	h.must(200, "POST", aiGenPath, map[string]any{"content": "Short note.", "fields": []string{"summary"}}, h.userToken(models.RoleEditor))
	h.must(401, "POST", aiGenPath, map[string]any{"content": "x", "fields": []string{"summary"}}, "")
	for name, body := range map[string]any{
		"blank content":   map[string]any{"content": "  \n ", "fields": []string{"summary"}},
		"no content":      map[string]any{"fields": []string{"summary"}},
		"no fields":       map[string]any{"content": "x", "fields": []string{}},
		"unknown field":   map[string]any{"content": "x", "fields": []string{"summary", "author"}},
		"summary too low": map[string]any{"content": "x", "fields": []string{"summary"}, "summary_max_length": 5},
		"too many tags":   map[string]any{"content": "x", "fields": []string{"tags"}, "tags_max_count": 50},
		"bad method":      map[string]any{"content": "x", "fields": []string{"tags"}, "method": "magic"},
		"model, none":     map[string]any{"content": "x", "fields": []string{"tags"}, "method": "model"},
		"too long":        map[string]any{"content": strings.Repeat("a", maxGenerateContent+1), "fields": []string{"summary"}},
	} {
		if r := h.do("POST", aiGenPath, body, h.admin); r.Status != 422 {
			t.Errorf("%s: status %d, want 422: %s", name, r.Status, r.Raw)
		}
	}
}

// With a chat model configured the fields come from the model (a fake
// OpenAI server): its JSON is read even inside a code fence, bounded, and a
// failing model gives 502 without the key.
func TestAIGenerateModel(t *testing.T) {
	const key = "sk-generate-secret-0123456789"
	f := newFakeProvider(t, key, "Here you go:\n```json\n{\"summary\": \"Backups copy the database and the object store.\", "+
		"\"tags\": [\"backup\", \"restore\", \"Backup\", \"\", \"database\"], \"title\": \"Backups\"}\n```")
	h := newHarness(t, "sqlite", map[string]string{"CHAT_PROVIDER": "openai-compatible", "CHAT_BASE_URL": f.URL(),
		"CHAT_API_KEY": key, "CHAT_MODEL": "fake-chat"})
	var out AIGenerateResponse
	h.must(200, "POST", aiGenPath, map[string]any{"content": aiGenDoc, "fields": []string{"summary", "tags", "title"}, "tags_max_count": 2}, h.admin).into(t, &out)
	if out.Generator != "model" || out.Model != "fake-chat" || *out.Summary != "Backups copy the database and the object store." ||
		*out.Title != "Backups" || strings.Join(out.Tags, ",") != "backup,restore" {
		t.Fatalf("%+v (tags %q)", out, out.Tags)
	}
	body := f.lastBody("/v1/chat/completions")
	msgs, _ := body["messages"].([]any)
	if body["model"] != "fake-chat" || len(msgs) != 2 || !strings.Contains(toJSON(msgs), "nightly backup copies") ||
		!strings.Contains(toJSON(msgs), "at most 2 short keyword tags") || body["max_tokens"] == nil {
		t.Errorf("request to the model: %v", body)
	}

	// method=extractive stays local.
	calls := f.count("/v1/chat/completions")
	h.must(200, "POST", aiGenPath, map[string]any{"content": aiGenDoc, "fields": []string{"title"}, "method": "extractive"}, h.admin).into(t, &out)
	if out.Generator != "extractive" || *out.Title != "Backup and Restore Guide" || f.count("/v1/chat/completions") != calls {
		t.Errorf("extractive with a model: %+v", out)
	}

	// An answer without JSON, and a refused key: 502, the key never shown.
	f.setAnswer("I cannot help with that.")
	r := h.must(502, "POST", aiGenPath, map[string]any{"content": aiGenDoc, "fields": []string{"summary"}}, h.admin)
	if !strings.Contains(r.Msg, "JSON object") {
		t.Errorf("no JSON: %s", r.Raw)
	}
	f.setKey("another-key")
	r = h.must(502, "POST", aiGenPath, map[string]any{"content": aiGenDoc, "fields": []string{"summary"}}, h.admin)
	if !strings.Contains(r.Msg, "401") || strings.Contains(string(r.Raw), key) {
		t.Errorf("refused key: %s", r.Raw)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
