package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// crossOrigin is the reference client served from another origin: fetch
// without credentials, so no cookie goes either way, and it never reads
// X-Lore-Session-Secret.
var crossOrigin = &http.Client{Timeout: 5 * time.Minute}

// visitorGet is a GET of the client API as that client makes it; it returns
// the status and the envelope's data.
func visitorGet(t *testing.T, base, path string) (int, json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Origin", "http://client.example")
	res, err := crossOrigin.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(raw, &env)
	return res.StatusCode, env.Data
}

// TestReferenceClientCrossOriginOwnsItsThreadsByVisitorID: the reference
// client (CatWiki 1.1.7 frontend/client) called cross-origin sends no cookie
// and reads no custom header, only its member id: getVisitorId(), "v_" and
// 16 random hex digits. That strong member id owns the threads it opens: the
// sidebar lists them, the thread and its tool results open, and a follow-up
// continues the thread. Another strong member id sees nothing and cannot
// continue; weak member ids ("alice", "anonymous") grant nothing. On the old
// code the list was empty, the reads 404 and the follow-up was refused
// (403, "belongs to another member or site").
func TestReferenceClientCrossOriginOwnsItsThreadsByVisitorID(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	base := a.listen()
	site := a.site("Handbook")
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	const visitor, stranger = "v_3f9a1c7e5b2d4860", "v_0c8e2a4f6b1d3957"
	origin := []string{"Origin", "http://client.example"}

	m1 := clientSendWith(t, crossOrigin, base, map[string]any{"input": "How do I install Lore?", "stream": true, "user": visitor}, origin...)
	if !strings.HasPrefix(m1.threadID, "auto-") || m1.status != "streaming" || len(m1.toolCalls) == 0 {
		t.Fatalf("first answer: %+v", m1)
	}

	list := func(member string) []string {
		t.Helper()
		st, data := visitorGet(t, base, "/v1/chat/sessions?member_id="+member+"&page=1&size=20")
		var l struct {
			List []struct {
				ThreadID string `json:"thread_id"`
			} `json:"list"`
		}
		if st != 200 || json.Unmarshal(data, &l) != nil {
			t.Fatalf("list %s: %d %s", member, st, data)
		}
		var ids []string
		for _, s := range l.List {
			ids = append(ids, s.ThreadID)
		}
		return ids
	}
	if got := list(visitor); len(got) != 1 || got[0] != m1.threadID {
		t.Fatalf("the visitor's sidebar: %v, want [%s]", got, m1.threadID)
	}

	// The thread opens, with its tool result (the answer is stored just
	// after the stream ends).
	type thread struct {
		Messages []struct {
			Role       string  `json:"role"`
			ToolCallID *string `json:"tool_call_id"`
		} `json:"messages"`
	}
	var th thread
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, data := visitorGet(t, base, "/v1/chat/sessions/"+m1.threadID+"/messages?member_id="+visitor)
		if st != 200 || json.Unmarshal(data, &th) != nil {
			t.Fatalf("messages: %d %s", st, data)
		}
		if n := len(th.Messages); n > 0 && th.Messages[n-1].Role == "assistant" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	toolCall := ""
	for _, m := range th.Messages {
		if m.Role == "tool" && m.ToolCallID != nil {
			toolCall = *m.ToolCallID
		}
	}
	if toolCall == "" {
		t.Fatalf("no tool row in %+v", th)
	}
	if st, data := visitorGet(t, base, "/v1/chat/sessions/"+m1.threadID+"/tool-result/"+toolCall+"?member_id="+visitor); st != 200 ||
		!strings.Contains(string(data), "content") {
		t.Fatalf("tool result: %d %s", st, data)
	}
	if st, _ := visitorGet(t, base, "/v1/chat/sessions/"+m1.threadID+"?member_id="+visitor); st != 200 {
		t.Fatalf("session: %d", st)
	}

	// A stranger (strong or weak member id) sees nothing and cannot continue.
	for _, who := range []string{stranger, "alice", "anonymous"} {
		if got := list(who); len(got) != 0 {
			t.Fatalf("%s lists %v", who, got)
		}
		for _, p := range []string{"/v1/chat/sessions/" + m1.threadID + "?member_id=" + who,
			"/v1/chat/sessions/" + m1.threadID + "/messages?member_id=" + who,
			"/v1/chat/sessions/" + m1.threadID + "/tool-result/" + toolCall + "?member_id=" + who} {
			if st, data := visitorGet(t, base, p); st != 404 {
				t.Fatalf("GET %s: %d %s", p, st, data)
			}
		}
		m := clientSendWith(t, crossOrigin, base, map[string]any{"input": "And then?", "stream": true, "user": who,
			"previous_response_id": m1.threadID}, origin...)
		if !strings.Contains(m.content, "belongs to another") {
			t.Fatalf("%s continued the visitor's thread: %+v", who, m)
		}
	}

	// The follow-up continues the thread (on the old code: 403).
	m2 := clientSendWith(t, crossOrigin, base, map[string]any{"input": "How do I upgrade it?", "stream": true, "user": visitor,
		"previous_response_id": m1.threadID}, origin...)
	if m2.threadID != m1.threadID || m2.status != "streaming" || strings.HasPrefix(m2.content, "⚠️") {
		t.Fatalf("follow-up: %+v", m2)
	}
	if got := list(visitor); len(got) != 1 || got[0] != m1.threadID {
		t.Fatalf("after the follow-up: %v", got)
	}

	// Weak member ids own nothing: their own thread is not listed, not
	// readable and not continued without the secret.
	for _, weak := range []string{"alice", "anonymous"} {
		w := clientSendWith(t, crossOrigin, base, map[string]any{"input": "How do I install Lore?", "stream": true, "user": weak}, origin...)
		if w.threadID == "" || w.status != "streaming" {
			t.Fatalf("%s: %+v", weak, w)
		}
		if got := list(weak); len(got) != 0 {
			t.Fatalf("%s lists %v without the secret", weak, got)
		}
		if st, _ := visitorGet(t, base, "/v1/chat/sessions/"+w.threadID+"/messages?member_id="+weak); st != 404 {
			t.Fatalf("%s reads its thread without the secret: %d", weak, st)
		}
		m := clientSendWith(t, crossOrigin, base, map[string]any{"input": "And then?", "stream": true, "user": weak,
			"previous_response_id": w.threadID}, origin...)
		if !strings.Contains(m.content, "belongs to another") {
			t.Fatalf("%s continued without the secret: %+v", weak, m)
		}
	}
}
