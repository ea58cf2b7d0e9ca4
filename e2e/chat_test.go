package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/api/apitest"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/sdk/client"
)

// sseEvent is one parsed server-sent event.
type sseEvent = apitest.Event

// stream sends a request and parses the SSE body.
func (a *app) stream(method, path string, body any, headers ...string) (int, []sseEvent) {
	a.t.Helper()
	status, evs, _ := a.streamFull(method, path, body, headers...)
	return status, evs
}

// streamFull is stream with the response headers.
func (a *app) streamFull(method, path string, body any, headers ...string) (int, []sseEvent, http.Header) {
	a.t.Helper()
	res := a.send(method, path, body, headers...)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return res.StatusCode, []sseEvent{{Data: string(raw)}}, res.Header
	}
	return res.StatusCode, apitest.ParseEvents(raw), res.Header
}

// streamAuth is stream with the admin token.
func (a *app) streamAuth(method, path string) (int, []sseEvent) {
	return a.stream(method, path, nil, "Authorization", "Bearer "+a.token)
}

func types(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

const installDoc = "# Installing Lore\n\nTo install Lore, download the archive and run make run in the directory. The first start creates an admin account.\n\n## Upgrading\n\nStop the service, replace the binary and start it again."

func TestChatStreamsCitedAnswerAndResumes(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			a := newApp(t, dialect, nil)
			siteA := a.site("Chat A " + dialect)
			siteB := a.site("Chat B " + dialect)
			docA := a.newDoc(siteA, "Installation", installDoc, "published")
			docB := a.newDoc(siteB, "Installing the other product", "To install the other product, use the secret installer of site B.", "published")
			a.waitStatus(docA, "completed")
			a.waitStatus(docB, "completed")

			body := map[string]any{"input": "How do I install Lore?", "stream": true, "filter": map[string]any{"site_id": siteA}, "user": "member-1"}
			status, evs := a.stream("POST", "/v1/chat/responses", body)
			if status != 200 {
				t.Fatalf("status %d: %v", status, evs)
			}
			ts := types(evs)
			// The model streams the call (delta), then the tool starts and
			// completes: the reference's order, which its client relies on.
			joined := strings.Join(ts, ",")
			if !regexp.MustCompile(`^response\.created,(response\.tool_call\.delta,)+response\.tool_call\.started,response\.tool_call\.completed,`).MatchString(joined) {
				t.Fatalf("events: %v", ts)
			}
			n := len(ts)
			if ts[n-1] != "[DONE]" || ts[n-2] != "response.completed" || ts[n-3] != "response.knowledge_sources" {
				t.Fatalf("tail of stream: %v", ts)
			}
			for i := 0; i < n-1; i++ {
				if evs[i].ID != i+1 {
					t.Fatalf("event %d has id %d", i, evs[i].ID)
				}
			}
			completedTool := strings.Index(strings.Join(ts, ","), "response.tool_call.completed")
			firstText := strings.Index(strings.Join(ts, ","), "response.output_text.delta")
			if completedTool < 0 || firstText < completedTool {
				t.Fatalf("tool completion must precede the answer text: %v", ts)
			}
			text := apitest.Answer(evs)
			if !strings.Contains(text, "[1]") || strings.Contains(text, "secret installer") {
				t.Fatalf("answer %q", text)
			}
			var ks struct {
				Sources []struct {
					DocumentID  int64 `json:"documentId"`
					SiteID      int64 `json:"siteId"`
					SourceIndex int   `json:"sourceIndex"`
				} `json:"sources"`
			}
			_ = json.Unmarshal([]byte(evs[n-3].Data), &ks)
			if len(ks.Sources) == 0 {
				t.Fatal("no sources")
			}
			for _, s := range ks.Sources {
				if s.SiteID != siteA || s.DocumentID == docB {
					t.Fatalf("source from another site: %+v", s)
				}
			}
			var completed struct {
				Response struct {
					ID    string         `json:"id"`
					Usage map[string]int `json:"usage"`
				} `json:"response"`
			}
			_ = json.Unmarshal([]byte(evs[n-2].Data), &completed)
			thread := completed.Response.ID
			if !strings.HasPrefix(thread, "auto-") || completed.Response.Usage["total_tokens"] == 0 {
				t.Fatalf("completed: %s", evs[n-2].Data)
			}

			// Resume after event 3: the rest, exactly once, ids continuing.
			status, rest := a.stream("GET", "/v1/chat/responses/"+thread+"?member_id=member-1", nil, "Last-Event-ID", "3")
			if status != 200 || len(rest) != n-3 || rest[0].ID != 4 || apitest.Answer(rest) != apitest.Answer(evs[3:]) {
				t.Fatalf("resume: status %d, %d events (want %d): %v", status, len(rest), n-3, types(rest))
			}

			// The turn is stored once in the flat format.
			ctx := context.Background()
			var rows []models.ChatMessage
			eventually(t, 10*time.Second, "turn persisted", func() bool {
				rows = nil
				_ = a.d.DB.NewSelect().Model(&rows).Where("thread_id = ?", thread).Order("position").Scan(ctx)
				return len(rows) == 4
			})
			roles := []string{rows[0].Role, rows[1].Role, rows[2].Role, rows[3].Role}
			if fmt.Sprint(roles) != "[user assistant tool assistant]" || rows[1].ToolCalls == "[]" || rows[2].ToolCallID == "" ||
				rows[3].Content != text || rows[3].MessageSeq == nil || *rows[3].MessageSeq != 0 {
				t.Fatalf("stored rows: %+v", rows)
			}
			// Ids, elapsed times and sources as stored; the tool call's
			// result is served by the tool-result endpoint.
			var calls []struct {
				ID        string `json:"id"`
				ElapsedMS *int64 `json:"elapsed_ms"`
			}
			var sources []map[string]any
			if json.Unmarshal([]byte(rows[1].ToolCalls), &calls) != nil || len(calls) != 1 || calls[0].ID != rows[2].ToolCallID ||
				calls[0].ElapsedMS == nil || json.Unmarshal([]byte(rows[3].Sources), &sources) != nil || len(sources) == 0 ||
				sources[0]["sourceIndex"] != float64(1) || rows[3].ElapsedMS <= 0 || !strings.HasPrefix(rows[0].ChatMessageID, thread) ||
				rows[3].ChatMessageID == rows[0].ChatMessageID {
				t.Fatalf("stored turn: calls %s, sources %s, rows %+v", rows[1].ToolCalls, rows[3].Sources, rows)
			}
			var tr struct {
				ToolCallID string `json:"tool_call_id"`
				Content    string `json:"content"`
			}
			r0 := a.do("GET", "/v1/chat/sessions/"+thread+"/tool-result/"+calls[0].ID+"?member_id=member-1", nil, "")
			// The reference's client parses the content as a JSON array of
			// {source_index, title, content, metadata:{document_id, …}}.
			var chunks []struct {
				SourceIndex int    `json:"source_index"`
				Title       string `json:"title"`
				Content     string `json:"content"`
				Metadata    struct {
					DocumentID int64 `json:"document_id"`
				} `json:"metadata"`
			}
			if r0.into(t, &tr); tr.ToolCallID != calls[0].ID || json.Unmarshal([]byte(tr.Content), &chunks) != nil || len(chunks) == 0 ||
				chunks[0].SourceIndex != 1 || chunks[0].Metadata.DocumentID == 0 || !strings.Contains(chunks[0].Content, "download the archive") {
				t.Fatalf("tool result: %s", r0.Raw)
			}
			if r := a.do("GET", "/v1/chat/sessions/"+thread+"/tool-result/"+calls[0].ID+"?member_id=member-2", nil, ""); r.Status != 403 {
				t.Fatalf("tool result for another member: %d %s", r.Status, r.Raw)
			}

			// A second turn continues the thread; sources keep numbering.
			body2 := map[string]any{"input": "And how do I upgrade?", "stream": false, "filter": map[string]any{"site_id": siteA},
				"user": "member-1", "previous_response_id": thread}
			r := a.do("POST", "/v1/chat/responses", body2, "")
			var obj struct {
				ID     string `json:"id"`
				Object string `json:"object"`
				Output []struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"output"`
				Usage     map[string]int `json:"usage"`
				Status    string         `json:"status"`
				Model     string         `json:"model"`
				CreatedAt int64          `json:"created_at"`
				Sources   []struct {
					DocumentID  int64 `json:"documentId"`
					SourceIndex int   `json:"sourceIndex"`
				} `json:"sources"`
			}
			if r.Status != 200 || json.Unmarshal(r.Raw, &obj) != nil || obj.ID != thread || obj.Object != "response" ||
				obj.Status != "completed" || obj.Model == "" || obj.CreatedAt == 0 || obj.Usage["total_tokens"] == 0 {
				t.Fatalf("non-stream: %d %s", r.Status, r.Raw)
			}
			txt := obj.Output[0].Content[0].Text
			// Each turn numbers its sources from 1, as the reference does.
			if !strings.Contains(txt, "[1]") {
				t.Fatalf("second turn should cite from [1] on: %q", txt)
			}
			// The non-stream answer carries its numbered sources: every [n]
			// it cites resolves to one of them.
			listed := map[int]bool{}
			for _, src := range obj.Sources {
				listed[src.SourceIndex] = src.DocumentID != 0
			}
			for _, m := range regexp.MustCompile(`\[(\d+)\]`).FindAllStringSubmatch(txt, -1) {
				if n, _ := strconv.Atoi(m[1]); !listed[n] {
					t.Fatalf("answer cites [%d] but its sources are %+v: %s", n, obj.Sources, r.Raw)
				}
			}
			// Another member cannot continue the thread.
			body2["user"] = "member-2"
			if r := a.do("POST", "/v1/chat/responses", body2, ""); r.Status != 403 {
				t.Fatalf("other member: %d %s", r.Status, r.Raw)
			}
			// The thread belongs to the owner secret the first answer set as
			// a cookie (the app keeps it as a browser does): a stranger who
			// knows the thread and member ids reads, continues and deletes
			// nothing (issue 16.7), with the cookie or the header alike.
			owner := a.owner
			if len(owner) != 43 {
				t.Fatalf("owner cookie %q", owner)
			}
			a.forgetCookie()
			for _, p := range []string{"/v1/chat/sessions/" + thread + "?member_id=member-1", "/v1/chat/sessions/" + thread + "/messages?member_id=member-1",
				"/v1/chat/sessions/" + thread + "/tool-result/" + calls[0].ID + "?member_id=member-1"} {
				if r := a.do("GET", p, nil, ""); r.Status != 404 {
					t.Fatalf("stranger GET %s: %d %s", p, r.Status, r.Raw)
				}
			}
			if status, _ := a.stream("GET", "/v1/chat/responses/"+thread+"?member_id=member-1", nil, "Last-Event-ID", "3"); status != 404 {
				t.Fatalf("stranger re-attach: %d", status)
			}
			body2["user"] = "member-1"
			if r := a.do("POST", "/v1/chat/responses", body2, ""); r.Status != 403 {
				t.Fatalf("stranger continues the thread: %d %s", r.Status, r.Raw)
			}
			if r := a.do("DELETE", "/v1/chat/sessions/"+thread+"?member_id=member-1", nil, ""); r.Status != 404 {
				t.Fatalf("stranger delete: %d %s", r.Status, r.Raw)
			}
			if r := a.do("GET", "/v1/chat/sessions?member_id=member-1", nil, ""); r.Status != 200 || !strings.Contains(string(r.Data), `"total":0`) {
				t.Fatalf("stranger list: %d %s", r.Status, r.Raw)
			}
			if status, _ := a.stream("GET", "/v1/chat/sessions/"+thread+"?member_id=member-1", nil, "X-Lore-Session-Secret", owner); status != 200 {
				t.Fatalf("owner by header: %d", status)
			}
			a.owner = owner
			// Metrics saw the requests, the activities and the model calls.
			metrics := string(a.do("GET", "/metrics", nil, "").Raw)
			for _, want := range []string{`lore_http_requests_total{method="POST",route="/v1/chat/responses",status="200"}`,
				`lore_activity_total{activity="ModelTurn",outcome="success"}`, `lore_model_request_duration_seconds_count{kind="chat"`,
				`lore_workflow_total{outcome="completed",workflow="ChatRun"}`, `lore_cache_hits_total`} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %s in:\n%s", want, grepLines(metrics, "lore_http_requests_total"))
				}
			}
			// Bad input.
			if r := a.do("POST", "/v1/chat/responses", map[string]any{"filter": map[string]any{"site_id": siteA}}, ""); r.Status != 422 {
				t.Fatalf("missing input: %d %s", r.Status, r.Raw)
			}
			if r := a.do("POST", "/v1/chat/responses", map[string]any{"input": "x", "filter": map[string]any{"site_id": 99999}}, ""); r.Status != 404 {
				t.Fatalf("missing site: %d %s", r.Status, r.Raw)
			}
			inactive := a.site("Inactive")
			a.admin("PUT", "/admin/api/v1/sites/"+itoa(inactive), map[string]any{"status": "inactive"}, nil)
			// In stream mode a setup error is HTTP 200 with response.error
			// and [DONE] (the reference's answer), its status in a header.
			if status, evs, hdr := a.streamFull("POST", "/v1/chat/responses", map[string]any{"input": "x", "stream": true, "filter": map[string]any{"site_id": inactive}}); status != 200 ||
				len(evs) != 2 || evs[0].Type != "response.error" || !strings.Contains(evs[0].Data, "site not found") || evs[1].Type != "[DONE]" ||
				hdr.Get("X-Lore-Error-Status") != "404" {
				t.Fatalf("inactive site: %d %v %v", status, evs, hdr)
			}
			if r := a.do("POST", "/v1/chat/responses", map[string]any{"input": "x", "thread_id": "t", "filter": map[string]any{"site_id": siteA}}, ""); r.Status != 422 {
				t.Fatalf("unknown field: %d %s", r.Status, r.Raw)
			}
		})
	}
}

// The stream opens once the turn is stored; a run that then cannot start
// ends the stream with an error and stores a notice as the turn's answer.
func TestChatRunThatCannotStartEndsTheStreamAndKeepsTheSession(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("No start")
	body := map[string]any{"input": "hello", "stream": true, "user": "m", "filter": map[string]any{"site_id": site}}
	status, evs := a.stream("POST", "/v1/chat/responses", body)
	if status != 200 || evs[len(evs)-1].Type != "[DONE]" {
		t.Fatalf("first turn: %d %v", status, types(evs))
	}
	var thread string
	var created struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	_ = json.Unmarshal([]byte(evs[0].Data), &created)
	thread = created.Response.ID
	sess, err := a.d.DB.ChatSessionByThread(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	// Occupy the next turn's workflow id with a run nobody executes.
	ctx := context.Background()
	if _, err := a.d.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.ChatRunID(thread, sess.ID, 2),
		TaskQueue: "nobody-polls-" + thread}, "Nothing"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.d.Temporal.TerminateWorkflow(ctx, workflows.ChatRunID(thread, sess.ID, 2), "", "test done")
	})
	body["previous_response_id"] = thread
	status, evs = a.stream("POST", "/v1/chat/responses", body)
	ts := types(evs)
	if status != 200 || ts[0] != "response.created" || ts[len(ts)-1] != "[DONE]" || !strings.Contains(evs[len(evs)-2].Data, "could not start the chat run") {
		t.Fatalf("second turn: %d %v %v", status, ts, evs)
	}
	var rows []models.ChatMessage
	if err := a.d.DB.NewSelect().Model(&rows).Where("thread_id = ? AND turn = 2", thread).Order("position").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Role != "user" || rows[1].Role != "assistant" || !strings.Contains(rows[1].Content, "[System Error: could not start the chat run") {
		t.Fatalf("turn 2 rows: %+v", rows)
	}
}

// TestPreviousResponseIDMustNameAStoredThread: a previous_response_id that
// no turn created is 404 and stores nothing (it used to open a session under
// the caller's id); one that is not a thread id (non-ASCII, spaces, too long)
// is 422 before anything runs (non-ASCII used to give 503 and a junk turn).
func TestPreviousResponseIDMustNameAStoredThread(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Threads")
	ask := func(prev string, stream bool) int {
		body := map[string]any{"input": "hello", "stream": stream, "user": "m", "filter": map[string]any{"site_id": site},
			"previous_response_id": prev}
		if stream {
			// A setup error of a stream is a response.error event; its
			// status is in X-Lore-Error-Status.
			status, evs, hdr := a.streamFull("POST", "/v1/chat/responses", body)
			if status != 200 || len(evs) != 2 || evs[0].Type != "response.error" || evs[1].Type != "[DONE]" {
				t.Fatalf("stream setup error: %d %v", status, evs)
			}
			s, _ := strconv.Atoi(hdr.Get("X-Lore-Error-Status"))
			return s
		}
		return a.do("POST", "/v1/chat/responses", body, "").Status
	}
	for _, stream := range []bool{false, true} {
		if s := ask("auto-000000000000", stream); s != 404 {
			t.Fatalf("unknown thread (stream=%v): %d", stream, s)
		}
		for _, bad := range []string{"线程-1", "two words", strings.Repeat("a", 101), "x\x00y"} {
			if s := ask(bad, stream); s != 422 {
				t.Fatalf("previous_response_id %q (stream=%v): %d", bad, stream, s)
			}
		}
	}
	var n int
	if err := a.d.DB.NewSelect().Table("chat_sessions").ColumnExpr("count(*)").Scan(context.Background(), &n); err != nil || n != 0 {
		t.Fatalf("sessions stored: %d %v", n, err)
	}
	var m int
	if err := a.d.DB.NewSelect().Table("chat_messages").ColumnExpr("count(*)").Scan(context.Background(), &m); err != nil || m != 0 {
		t.Fatalf("messages stored: %d %v", m, err)
	}
}
