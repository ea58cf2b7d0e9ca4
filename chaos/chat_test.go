//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lorekb/lore/api/apitest"
	"github.com/lorekb/lore/models"
)

// slowModel is an OpenAI-compatible chat endpoint served by the test
// process: the first call of a turn asks for the search tool, the next one
// streams the answer a word at a time, slowly, so the stream is still going
// when the API process is killed.
type slowModel struct {
	srv   *httptest.Server
	calls atomic.Int32
	words []string
	delay time.Duration
}

const slowAnswer = "To install Lore, download the archive, unpack it and run make run in the new directory [1]. " +
	"The first start creates an admin account and prints where to sign in [1]. " +
	"To upgrade, stop the service, replace the binary and start it again [1]."

func newSlowModel(t *testing.T, delay time.Duration) *slowModel {
	m := &slowModel{words: strings.Fields(slowAnswer), delay: delay}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// expected is the answer text the client must end up with.
func (m *slowModel) expected() string { return strings.Join(m.words, " ") + " " }

func (m *slowModel) serve(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	hasTool := false
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			hasTool = true
		}
	}
	stream := apitest.NewChatStream(w, "slow")
	if !hasTool {
		stream.SearchCall("install Lore")
		stream.Send(map[string]any{}, "tool_calls")
	} else {
		for _, word := range m.words {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(m.delay):
			}
			stream.Send(map[string]any{"content": word + " "}, nil)
		}
		stream.Send(map[string]any{}, "stop")
	}
	stream.End(50, len(m.words))
}

const installDoc = "# Installing Lore\n\nTo install Lore, download the archive and run make run in the directory. " +
	"The first start creates an admin account.\n\n## Upgrading\n\nStop the service, replace the binary and start it again."

// (b) The API process is killed with SIGKILL in the middle of a streamed
// chat answer and started again; the client re-attaches with Last-Event-ID
// and gets the rest of the answer exactly once, and the turn is stored once.
func TestChaosAPIRestartDuringChat(t *testing.T) {
	sc := newScenario(t, "(b) kill -9 API during streamed chat")
	m := newSlowModel(t, 120*time.Millisecond)
	modelEnv := map[string]string{"CHAT_PROVIDER": "openai", "CHAT_BASE_URL": m.srv.URL + "/v1", "CHAT_MODEL": "slow", "CHAT_API_KEY": "k"}
	s := newStack(sc, "b", stackOpts{API: modelEnv, Worker: modelEnv})
	site := s.CreateSite("Chaos B")
	var doc struct {
		ID int64 `json:"id"`
	}
	s.admin("POST", "/admin/api/v1/documents", map[string]any{"site_id": site, "title": "Installation", "content": installDoc, "status": "published"}, &doc)
	err := waitFor(2*time.Minute, 200*time.Millisecond, func() (bool, error) {
		var d struct {
			VectorStatus string `json:"vector_status"`
		}
		s.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", doc.ID), nil, &d)
		return d.VectorStatus == "completed", fmt.Errorf("vector_status %s", d.VectorStatus)
	})
	if err != nil {
		sc.fatalf("document vectorized before the chat", "%v", err)
	}

	// Start the stream and read until a few answer words arrived.
	const member = "chaos-member"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"input": "How do I install Lore?", "stream": true,
		"filter": map[string]any{"site_id": site}, "user": member})
	req, _ := http.NewRequestWithContext(ctx, "POST", s.Base+"/v1/chat/responses", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		sc.fatalf("POST /v1/chat/responses stream=true", "%v", err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		sc.fatalf("POST /v1/chat/responses stream=true", "status %d: %s", res.StatusCode, clip(string(b), 300))
	}
	br := bufio.NewReader(res.Body)
	var first []sseEvent
	for words := 0; words < 3; {
		ev, err := apitest.ReadEvent(br)
		if err != nil {
			sc.fatalf("read the first events", "%v after %d events", err, len(first))
		}
		if ev.Type == "[DONE]" || ev.Type == "response.completed" {
			sc.fatalf("read the first events", "the stream ended before the fault (%d events); the model is too fast", len(first))
		}
		first = append(first, ev)
		if ev.Type == "response.output_text.delta" {
			words++
		}
	}
	lastID := first[len(first)-1].ID
	var created struct {
		Type     string `json:"type"`
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	_ = json.Unmarshal([]byte(first[0].Data), &created)
	thread := created.Response.ID
	if created.Type != "response.created" || thread == "" {
		sc.fatalf("read the first events", "first event is not response.created with a thread id: %s", first[0].Data)
	}

	t0 := time.Now()
	s.KillAPI()
	res.Body.Close()
	sc.logf("API pid %d killed after %d events (last id %d, %d answer bytes); thread %s", s.api.Pid(), len(first), lastID, len(apitest.Answer(first)), thread)
	s.StartAPI()
	sc.logf("API back (pid %d) after %s", s.api.Pid(), time.Since(t0).Round(time.Millisecond))

	// Re-attach after the last event received.
	rreq, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/chat/responses/%s?member_id=%s", s.Base, thread, member), nil)
	rreq.Header.Set("Last-Event-ID", fmt.Sprint(lastID))
	// Only the thread's owner may re-attach: the secret the first answer gave.
	rreq.Header.Set("X-Lore-Session-Secret", res.Header.Get("X-Lore-Session-Secret"))
	rres, err := http.DefaultClient.Do(rreq)
	if err != nil {
		sc.fatalf("GET /v1/chat/responses/{thread} with Last-Event-ID", "%v", err)
	}
	defer rres.Body.Close()
	if rres.StatusCode != 200 {
		b, _ := io.ReadAll(rres.Body)
		sc.fatalf("GET /v1/chat/responses/{thread} with Last-Event-ID", "status %d: %s", rres.StatusCode, clip(string(b), 300))
	}
	var rest []sseEvent
	rbr := bufio.NewReader(rres.Body)
	for {
		ev, err := apitest.ReadEvent(rbr)
		if err != nil {
			if err != io.EOF {
				sc.fatalf("read the resumed stream", "%v after %d events", err, len(rest))
			}
			break
		}
		rest = append(rest, ev)
		if ev.Type == "[DONE]" {
			break
		}
	}

	// Event ids: 1..k before the fault, k+1.. after it, none twice.
	all := append(append([]sseEvent{}, first...), rest...)
	seen := map[int]bool{}
	dupIDs, gaps, completedN, errorsN := 0, 0, 0, 0
	want := 1
	var types []string
	for _, ev := range all {
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.completed":
			completedN++
		case "response.error":
			errorsN++
		}
		if ev.Type == "[DONE]" {
			continue
		}
		if seen[ev.ID] {
			dupIDs++
		}
		seen[ev.ID] = true
		if ev.ID != want {
			gaps++
		}
		want = ev.ID + 1
	}
	endsDone := len(rest) > 0 && rest[len(rest)-1].Type == "[DONE]"
	sc.check("event ids continue after Last-Event-ID: no duplicate, no gap; one response.completed then [DONE]",
		dupIDs == 0 && gaps == 0 && completedN == 1 && errorsN == 0 && endsDone && len(rest) > 1 && rest[0].ID == lastID+1,
		"%d events before the kill (ids 1..%d), %d after (first id %d); %d duplicate ids, %d gaps, %d completed, %d errors",
		len(first), lastID, len(rest), firstID(rest), dupIDs, gaps, completedN, errorsN)

	streamed := apitest.Answer(first) + apitest.Answer(rest)
	sc.check("concatenated deltas are the full answer, once", streamed == m.expected(),
		"%d bytes streamed (%d before the kill), want %d; got %q", len(streamed), len(apitest.Answer(first)), len(m.expected()), clip(streamed, 120))

	// The turn is stored once: one user row, one final assistant row whose
	// content is what was streamed.
	var rows []models.ChatMessage
	err = waitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
		rows = nil
		if err := s.DB.NewSelect().Model(&rows).Where("thread_id = ?", thread).Order("position").Scan(context.Background()); err != nil {
			return false, err
		}
		for _, r := range rows {
			if r.Role == "assistant" && r.MessageSeq != nil {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d rows, no final assistant row yet", len(rows))
	})
	if err != nil {
		sc.fatalf("turn persisted", "%v", err)
	}
	time.Sleep(time.Second) // a second, duplicate write would land by now
	rows = nil
	if err := s.DB.NewSelect().Model(&rows).Where("thread_id = ?", thread).Order("position").Scan(context.Background()); err != nil {
		sc.fatalf("turn persisted", "%v", err)
	}
	finals, users := 0, 0
	var final string
	var roles []string
	for _, r := range rows {
		roles = append(roles, r.Role)
		if r.Role == "user" {
			users++
		}
		if r.Role == "assistant" && r.MessageSeq != nil {
			finals++
			final = r.Content
		}
	}
	sc.check("turn persisted once: exactly one final assistant row in chat_messages, content == streamed answer",
		finals == 1 && users == 1 && final == streamed,
		"%d rows %v: %d final assistant, %d user; stored %d bytes, streamed %d", len(rows), roles, finals, users, len(final), len(streamed))
	sc.check("the run was not redone: 2 model calls (tool call + answer)", m.calls.Load() == 2, "%d model calls", m.calls.Load())
	sc.logf("events: %v", types)
}

func firstID(evs []sseEvent) int {
	if len(evs) == 0 {
		return 0
	}
	return evs[0].ID
}
