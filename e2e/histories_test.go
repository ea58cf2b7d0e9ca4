package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// TestChatHistoriesReplay runs one turn in each run mode (model calls as
// local activities with the reader in the worker's process; scheduled model
// calls that signal their pieces, with the worker elsewhere; the same ended
// by the run's timer) and replays each run's history with the workflow
// replayer: a run that does not replay its own history is not deterministic.
// With LORE_WRITE_HISTORIES=1 the histories are written to
// workflows/testdata, where workflows' replay test keeps every later change
// compatible with turns running when it is deployed.
func TestChatHistoriesReplay(t *testing.T) {
	modes := []struct {
		name  string
		env   map[string]string
		stall bool
	}{
		{"local", nil, false},
		{"scheduled", map[string]string{"LORE_RUN_WORKER": "false"}, false},
		{"scheduled-timeout", map[string]string{"LORE_RUN_WORKER": "false", "CHAT_STREAM_TIMEOUT_SECONDS": "2"}, true},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			m := newScriptedModel(t)
			m.stall.Store(mode.stall)
			a := newApp(t, "sqlite", modelEnv(m, mode.env))
			site := a.site("Replay")
			a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
			_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": site}})
			if len(evs) < 3 || evs[len(evs)-2].Type != "response.completed" {
				t.Fatalf("events %v", types(evs))
			}
			var sess models.ChatSession
			if err := a.d.DB.NewSelect().Model(&sess).Where("thread_id = ?", createdID(t, evs[0])).Scan(context.Background()); err != nil {
				t.Fatal(err)
			}
			wfID := workflows.ChatRunID(sess.ThreadID, sess.ID, 1)
			ctx := context.Background()
			if err := a.d.Temporal.GetWorkflow(ctx, wfID, "").Get(ctx, nil); err != nil {
				t.Fatal(err)
			}
			hist := a.history(wfID)
			raw, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
			if err != nil {
				t.Fatal(err)
			}
			// What is written is what is replayed here.
			loaded, err := client.HistoryFromJSON(bytes.NewReader(raw), client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := worker.NewWorkflowReplayer()
			workflows.RegisterChatReplay(r)
			if err := r.ReplayWorkflowHistory(nil, loaded); err != nil {
				t.Fatalf("%s: the run does not replay its own history: %v", mode.name, err)
			}
			if os.Getenv("LORE_WRITE_HISTORIES") != "" {
				if err := os.WriteFile(filepath.Join("..", "workflows", "testdata", "chat-"+mode.name+".json"), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// createdID is the thread id response.created carries.
func createdID(t *testing.T, ev sseEvent) string {
	t.Helper()
	var c struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(ev.Data), &c); err != nil || c.Response.ID == "" {
		t.Fatalf("response.created %q", ev.Data)
	}
	return c.Response.ID
}
