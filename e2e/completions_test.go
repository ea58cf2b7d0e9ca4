package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/models"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

// listen serves the app on a real port and returns its base URL.
func (a *app) listen() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.t.Fatal(err)
	}
	go func() { _ = a.srv.App().Listener(ln) }()
	return "http://" + ln.Addr().String()
}

func TestOpenAICompatibleEndpointsWithOfficialClient(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Completions")
	doc := a.newDoc(site, "Installation", installDoc, "published")
	a.waitStatus(doc, "completed")
	base := a.listen()
	ctx := context.Background()

	// EE bot API key of the site (only its hash is stored).
	key := "lore-test-key-123"
	now := time.Now().UTC()
	if _, err := a.d.DB.NewInsert().Model(&models.SiteAPIKey{SiteID: site, Name: "test", Prefix: key[:8], KeyHash: api.HashAPIKey(key), CreatedAt: now}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	clients := map[string]openai.Client{
		"chat/completions": openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"),
			option.WithQuery("site_id", itoa(site)), option.WithMaxRetries(0)),
		"bot/chat/completions": openai.NewClient(option.WithBaseURL(base+"/v1/bot/"), option.WithAPIKey(key), option.WithMaxRetries(0)),
	}
	params := openai.ChatCompletionNewParams{
		Model:    "lore",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("How do I install Lore?")},
	}
	for name, cl := range clients {
		t.Run(name, func(t *testing.T) {
			res, err := cl.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Choices) != 1 || !strings.Contains(res.Choices[0].Message.Content, "[1]") || res.Choices[0].FinishReason != "stop" {
				t.Fatalf("non-stream: %+v", res)
			}
			stream := cl.Chat.Completions.NewStreaming(ctx, params)
			acc := openai.ChatCompletionAccumulator{}
			chunks := 0
			for stream.Next() {
				acc.AddChunk(stream.Current())
				chunks++
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if chunks < 3 || !strings.Contains(acc.Choices[0].Message.Content, "[1]") {
				t.Fatalf("stream: %d chunks, %q", chunks, acc.Choices[0].Message.Content)
			}
		})
	}
	// The official client with the usage option and tools of its own
	// (accepted, ignored): the last chunk carries the usage.
	withUsage := params
	withUsage.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	withUsage.Tools = []openai.ChatCompletionToolParam{{Function: openai.FunctionDefinitionParam{Name: "client_tool"}}}
	usageClient := clients["chat/completions"]
	stream := usageClient.Chat.Completions.NewStreaming(ctx, withUsage)
	var last openai.ChatCompletionChunk
	for stream.Next() {
		last = stream.Current()
	}
	if err := stream.Err(); err != nil || last.Usage.TotalTokens == 0 {
		t.Fatalf("usage chunk: %v %+v", err, last)
	}
	// Internal events, as json.dumps writes them.
	_, evs := a.stream("POST", "/v1/chat/completions", map[string]any{"model": "lore", "stream": true, "include_internal_events": true,
		"messages": []map[string]any{{"role": "user", "content": "How do I install Lore?"}}, "filter": map[string]any{"site_id": site}})
	var internal []string
	for _, e := range evs {
		if strings.HasPrefix(e.Data, `{"status": `) || strings.HasPrefix(e.Data, `{"sources": `) {
			internal = append(internal, e.Data[:strings.Index(e.Data[2:], `"`)+2])
		}
	}
	if got := strings.Join(internal, ","); got != `{"status,{"status,{"sources` {
		t.Fatalf("internal event lines %q in %v", got, evs)
	}
	// A wrong key is refused; /bot/models works with and without a key.
	bad := openai.NewClient(option.WithBaseURL(base+"/v1/bot/"), option.WithAPIKey("nope"), option.WithMaxRetries(0))
	if _, err := bad.Chat.Completions.New(ctx, params); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("bad key: %v", err)
	}
	botClient := clients["bot/chat/completions"]
	page, err := botClient.Models.List(ctx)
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("models: %v %+v", err, page)
	}
}
