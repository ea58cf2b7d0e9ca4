package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
)

func TestLongThreadIsSummarized(t *testing.T) {
	a := newApp(t, "sqlite", map[string]string{"AGENT_SUMMARY_TRIGGER_MSG_COUNT": "5", "AGENT_SUMMARY_KEEP_LAST_N": "2"})
	site := a.site("Memory")
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	thread := ""
	for i, q := range []string{"How do I install Lore?", "How do I upgrade?", "What does the first start create?"} {
		body := map[string]any{"input": q, "stream": false, "user": "m", "filter": map[string]any{"site_id": site}}
		if thread != "" {
			body["previous_response_id"] = thread
		}
		r := a.do("POST", "/v1/chat/responses", body, "")
		var obj struct {
			ID string `json:"id"`
		}
		if r.Status != 200 || json.Unmarshal(r.Raw, &obj) != nil || obj.ID == "" {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Raw)
		}
		thread = obj.ID
	}
	var s models.ChatSession
	eventually(t, 20*time.Second, "third turn stored and summarized", func() bool {
		_ = a.d.DB.NewSelect().Model(&s).Where("thread_id = ?", thread).Scan(context.Background())
		// Summarized after turn 2 (8 messages > 5, keeping the last 2) and
		// again after turn 3 (2 + 4 = 6 > 5).
		ok := s.Summary != "" && s.SummaryUpTo > 3*10000 && s.MessageCount == 6
		if !ok {
			t.Logf("session: up_to=%d count=%d summary=%.30q", s.SummaryUpTo, s.MessageCount, s.Summary)
		}
		return ok
	})
	conv, err := a.d.DB.LoadContext(context.Background(), thread)
	if err != nil || len(conv.Messages) != 2 {
		t.Fatalf("model context after summarization: %d messages (%v)", len(conv.Messages), err)
	}
	if !strings.HasPrefix(s.Summary, "Summary of earlier conversation") {
		t.Fatalf("summary %q", s.Summary)
	}
	// The full history stays readable; only the model context is shortened.
	var msgs struct {
		Messages []map[string]any `json:"messages"`
	}
	a.do("GET", "/v1/chat/sessions/"+thread+"/messages?member_id=m", nil, "").into(t, &msgs)
	if len(msgs.Messages) != 12 {
		t.Fatalf("%d stored messages, want 12 (3 turns × user, tool call, tool, answer)", len(msgs.Messages))
	}
}

func TestJobWatchStreamsProgressUntilDone(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Watch")
	var ids []int64
	for i := 0; i < 20; i++ {
		ids = append(ids, a.newDoc(site, fmt.Sprintf("Doc %d", i), guide, "draft"))
	}
	var br struct {
		JobID string `json:"job_id"`
	}
	a.admin("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": ids}, &br)
	status, evs := a.streamAuth("GET", "/admin/api/v1/jobs/"+br.JobID+":watch")
	if status != 200 || len(evs) < 2 {
		t.Fatalf("watch: %d %v", status, evs)
	}
	last := evs[len(evs)-2]
	if !strings.Contains(last.Data, `"status":"completed"`) || !strings.Contains(last.Data, `"completed":20`) {
		t.Fatalf("last progress event: %s", last.Data)
	}
	if evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("stream did not end with done: %v", evs[len(evs)-1])
	}
}
