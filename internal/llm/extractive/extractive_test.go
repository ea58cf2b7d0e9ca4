package extractive

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/llm"
)

var searchTool = llm.ToolDef{
	Name:        llm.SearchToolName,
	Description: "Search the documentation",
	Parameters:  map[string]any{"type": "object"},
}

// run calls Generate and returns the result with the deltas it streamed.
func run(t *testing.T, req llm.Request) (llm.Result, []llm.Delta) {
	t.Helper()
	var deltas []llm.Delta
	res, err := New().Generate(context.Background(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return res, deltas
}

func joinText(deltas []llm.Delta) string {
	var b strings.Builder
	for _, d := range deltas {
		b.WriteString(d.Text)
	}
	return b.String()
}

// toolTurn builds the conversation after the search tool has answered.
func toolTurn(question string, toolOutputs ...string) []llm.Message {
	msgs := []llm.Message{
		{Role: "system", Content: "Answer from the documentation and cite passages."},
		{Role: "user", Content: "An earlier question. It was answered."},
		{Role: "assistant", Content: "An earlier answer. [1]"},
		{Role: "user", Content: question},
	}
	for i, out := range toolOutputs {
		id := "call_" + string(rune('a'+i))
		msgs = append(msgs,
			llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: id, Name: llm.SearchToolName, Arguments: `{"query":"x"}`}}},
			llm.Message{Role: "tool", ToolCallID: id, Content: out},
		)
	}
	return msgs
}

func TestFirstTurnCallsSearch(t *testing.T) {
	msgs := []llm.Message{
		{Role: "system", Content: "You answer questions."},
		{Role: "user", Content: "  How do I reset my password? "},
	}
	res, deltas := run(t, llm.Request{Messages: msgs, Tools: []llm.ToolDef{{Name: "other"}, searchTool}})

	if res.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish = %q", res.FinishReason)
	}
	if res.Message.Role != "assistant" || res.Message.Content != "" {
		t.Errorf("message = %+v", res.Message)
	}
	if len(res.Message.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v", res.Message.ToolCalls)
	}
	call := res.Message.ToolCalls[0]
	if call.Name != llm.SearchToolName {
		t.Errorf("name = %q", call.Name)
	}
	if !regexp.MustCompile(`^call_[0-9a-f]{12}$`).MatchString(call.ID) {
		t.Errorf("id = %q", call.ID)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || args["query"] != "How do I reset my password?" || len(args) != 1 {
		t.Errorf("arguments = %s (%v)", call.Arguments, err)
	}

	// The call is streamed as tool-call pieces that rebuild it exactly.
	if len(deltas) < 2 {
		t.Fatalf("want several deltas, got %+v", deltas)
	}
	first := deltas[0].ToolCall
	if first == nil || first.ID != call.ID || first.Name != call.Name || first.Index != 0 {
		t.Errorf("first delta = %+v", deltas[0])
	}
	var argText strings.Builder
	for _, d := range deltas {
		if d.ToolCall == nil || d.Text != "" || d.ToolCall.Index != 0 {
			t.Fatalf("unexpected delta %+v", d)
		}
		argText.WriteString(d.ToolCall.Arguments)
	}
	if argText.String() != call.Arguments {
		t.Errorf("streamed arguments %q != %q", argText.String(), call.Arguments)
	}
	if res.Usage.InputTokens < 1 || res.Usage.OutputTokens < 1 {
		t.Errorf("usage = %+v", res.Usage)
	}

	// Same query and history: same ID. Longer history: a new ID.
	again, _ := run(t, llm.Request{Messages: msgs, Tools: []llm.ToolDef{searchTool}})
	if again.Message.ToolCalls[0].ID != call.ID {
		t.Errorf("ID not deterministic: %q vs %q", again.Message.ToolCalls[0].ID, call.ID)
	}
	longer := append([]llm.Message{{Role: "system", Content: "extra"}}, msgs...)
	other, _ := run(t, llm.Request{Messages: longer, Tools: []llm.ToolDef{searchTool}})
	if other.Message.ToolCalls[0].ID == call.ID {
		t.Errorf("ID should depend on message count")
	}
}

func TestSearchArgumentsKeepTextVerbatim(t *testing.T) {
	q := `如何安装 <Lore> & "升级"？`
	res, _ := run(t, llm.Request{Messages: []llm.Message{{Role: "user", Content: q}}, Tools: []llm.ToolDef{searchTool}})
	if len(res.Message.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v", res.Message.ToolCalls)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(res.Message.ToolCalls[0].Arguments), &args); err != nil || args["query"] != q {
		t.Errorf("arguments = %s (%v)", res.Message.ToolCalls[0].Arguments, err)
	}
	if strings.Contains(res.Message.ToolCalls[0].Arguments, `\u`) {
		t.Errorf("arguments should not be escaped: %s", res.Message.ToolCalls[0].Arguments)
	}
}

const accountPassages = `[1] Account settings
You can change your display name in Settings. To reset your password, open Settings
and choose Reset password
[...]
A reset link is emailed to you within five minutes. The link expires after one hour.

[2] Security FAQ
Passwords must be at least twelve characters long. We never store passwords in plain text.

[3] Release notes
Version 2.1 adds dark mode.`

func TestAnswerCitesBestSentences(t *testing.T) {
	req := llm.Request{
		Messages: toolTurn("How do I reset my password?", accountPassages),
		Tools:    []llm.ToolDef{searchTool},
	}
	res, deltas := run(t, req)
	want := "To reset your password, open Settings and choose Reset password [1] " +
		"A reset link is emailed to you within five minutes. [1]"
	if res.Message.Content != want {
		t.Errorf("answer:\n got %q\nwant %q", res.Message.Content, want)
	}
	if res.FinishReason != llm.FinishStop || len(res.Message.ToolCalls) != 0 || res.Message.Role != "assistant" {
		t.Errorf("result = %+v", res)
	}
	if got := joinText(deltas); got != res.Message.Content {
		t.Errorf("streamed %q != content %q", got, res.Message.Content)
	}
	if len(deltas) < 15 {
		t.Errorf("expected word-sized deltas, got %d: %+v", len(deltas), deltas)
	}
	for _, d := range deltas {
		if d.ToolCall != nil || strings.Count(strings.TrimSpace(d.Text), " ") > 0 {
			t.Errorf("delta is not one word: %+v", d)
		}
	}
	if res.Usage.InputTokens < 50 || res.Usage.OutputTokens != utf8.RuneCountInString(want)/4 {
		t.Errorf("usage = %+v", res.Usage)
	}
}

func TestAnswerUsesAllToolResultsAfterLastQuestion(t *testing.T) {
	// Two searches, then a force-stop notice: passages from both count, the
	// notice is ignored, and results from before the question are not used.
	msgs := []llm.Message{
		{Role: "user", Content: "Where are the logs?"},
		{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "old", Name: llm.SearchToolName, Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "old", Content: "[1] Logs\nThe server writes logs to /var/log/lore and rotates the logs daily."},
		{Role: "assistant", Content: "The server writes logs to /var/log/lore. [1]"},
	}
	msgs = append(msgs, toolTurn("How do I back up the database?",
		"[1] Backups\nTo back up the database, run lore backup.\n\n[2] Storage\nThe database is PostgreSQL.",
		"[3] Upgrades\nBack up the database before every upgrade. The logs are kept.",
		"You have reached the search limit. Answer now with what you have.",
	)...)
	res, _ := run(t, llm.Request{Messages: msgs, Tools: []llm.ToolDef{searchTool}})
	want := "To back up the database, run lore backup. [1] Back up the database before every upgrade. [3]"
	if res.Message.Content != want {
		t.Errorf("answer:\n got %q\nwant %q", res.Message.Content, want)
	}
}

func TestAnswerCJK(t *testing.T) {
	passages := "[1] 安装指南\n本系统支持全文检索。安装步骤：下载安装包，然后运行安装程序。安装完成后重启服务。\n\n[2] 常见问题\n今天天气很好。"
	res, deltas := run(t, llm.Request{Messages: toolTurn("如何安装？", passages), Tools: []llm.ToolDef{searchTool}})
	want := "安装步骤：下载安装包，然后运行安装程序。 [1] 安装完成后重启服务。 [1]"
	if res.Message.Content != want {
		t.Errorf("answer:\n got %q\nwant %q", res.Message.Content, want)
	}
	if joinText(deltas) != want {
		t.Errorf("streamed text differs: %q", joinText(deltas))
	}
	if len(deltas) < 10 {
		t.Errorf("CJK answer should stream in small pieces, got %d", len(deltas))
	}
}

func TestAnswerWithoutPassages(t *testing.T) {
	cases := map[string]llm.Request{
		"no documents": {Messages: toolTurn("What is Lore?", "No relevant documents found."), Tools: []llm.ToolDef{searchTool}},
		"notice only":  {Messages: toolTurn("What is Lore?", "Stop searching and answer now.")},
		"no tools":     {Messages: []llm.Message{{Role: "user", Content: "What is Lore?"}}},
		"empty":        {},
		"blank user":   {Messages: []llm.Message{{Role: "user", Content: "   "}}, Tools: []llm.ToolDef{searchTool}},
		"header only":  {Messages: toolTurn("What is Lore?", "[1] Title with no text")},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			res, deltas := run(t, req)
			if res.Message.Content != NotFoundAnswer || len(res.Message.ToolCalls) != 0 {
				t.Errorf("result = %+v", res)
			}
			if joinText(deltas) != NotFoundAnswer {
				t.Errorf("streamed %q", joinText(deltas))
			}
		})
	}
}

func TestAnswerFallsBackToTopPassage(t *testing.T) {
	// No word of the question occurs in the passages, but search found them:
	// quote the opening of the first passage rather than claim nothing exists.
	passages := "[4] Installation\nDownload the package and run the installer. Then open the dashboard.\n\n[5] Other\nUnrelated text."
	res, _ := run(t, llm.Request{Messages: toolTurn("Wie richte ich es ein?", passages)})
	if want := "Download the package and run the installer. [4]"; res.Message.Content != want {
		t.Errorf("got %q, want %q", res.Message.Content, want)
	}
}

func TestSummarize(t *testing.T) {
	msgs := []llm.Message{
		{Role: "system", Content: "Summarize the conversation."},
		{Role: "user", Content: "How do I install Lore? I use Ubuntu 24.04."},
		{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c", Name: llm.SearchToolName, Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c", Content: "[1] Install\nUse the apt package."},
		{Role: "assistant", Content: "Install the apt package, e.g. with apt install lore. [1] Then start it."},
		{Role: "user", Content: "And upgrading?"},
	}
	res, deltas := run(t, llm.Request{Messages: msgs, Tools: []llm.ToolDef{searchTool}, Purpose: llm.PurposeSummarize})
	want := "Summary of earlier conversation: User: How do I install Lore? " +
		"Assistant: Install the apt package, e.g. with apt install lore. User: And upgrading?"
	if res.Message.Content != want {
		t.Errorf("summary:\n got %q\nwant %q", res.Message.Content, want)
	}
	if len(res.Message.ToolCalls) != 0 || res.FinishReason != llm.FinishStop {
		t.Errorf("summary must not call tools: %+v", res)
	}
	if joinText(deltas) != want {
		t.Errorf("streamed %q", joinText(deltas))
	}

	// Long conversations are capped.
	var long []llm.Message
	for i := 0; i < 50; i++ {
		long = append(long, llm.Message{Role: "user", Content: strings.Repeat("word ", 30) + "end."})
	}
	res, _ = run(t, llm.Request{Messages: long, Purpose: llm.PurposeSummarize})
	body := strings.TrimPrefix(res.Message.Content, SummaryPrefix)
	if !strings.HasPrefix(res.Message.Content, SummaryPrefix) || utf8.RuneCountInString(body) > maxSummaryRunes || !strings.HasSuffix(body, "…") {
		t.Errorf("long summary not capped: %d runes", utf8.RuneCountInString(body))
	}
}

func TestDeterministic(t *testing.T) {
	reqs := []llm.Request{
		{Messages: toolTurn("How do I reset my password?", accountPassages), Tools: []llm.ToolDef{searchTool}},
		{Messages: toolTurn("How do I reset my password?"), Tools: []llm.ToolDef{searchTool}},
		{Messages: toolTurn("How do I reset my password?", accountPassages), Purpose: llm.PurposeSummarize},
	}
	for i, req := range reqs {
		r1, d1 := run(t, req)
		for j := 0; j < 5; j++ {
			r2, d2 := run(t, req)
			if !reflect.DeepEqual(r1, r2) || !reflect.DeepEqual(d1, d2) {
				t.Fatalf("request %d: run %d differs", i, j)
			}
		}
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Generate(ctx, llm.Request{Messages: toolTurn("q", accountPassages)}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before start: err = %v", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	n := 0
	_, err := New().Generate(ctx, llm.Request{Messages: toolTurn("How do I reset my password?", accountPassages)}, func(llm.Delta) {
		n++
		if n == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled mid-stream: err = %v", err)
	}
	if n != 2 {
		t.Errorf("got %d deltas, want streaming to stop right after cancel", n)
	}
}

func TestOddInputDoesNotFail(t *testing.T) {
	odd := []string{
		"", "[", "[1]", "[1] \n\n\n[2]\n[...]\n[...]", "[-1] x\ny", "[99999999999999999999] t\nbody text here.",
		"\x00\xff\xfe", "[1] t\n" + strings.Repeat("no punctuation at all ", 200),
		"[1] t\n```\ncode();\n```\n| a | b |\n|---|---|\n- item one\n> quoted text",
	}
	for _, content := range odd {
		for _, purpose := range []string{"", llm.PurposeSummarize} {
			req := llm.Request{Purpose: purpose, Messages: []llm.Message{
				{Role: "weird", Content: content},
				{Role: "user", Content: content},
				{Role: "tool", Content: content},
			}}
			res, deltas := run(t, req)
			if joinText(deltas) != res.Message.Content {
				t.Errorf("%q: streamed text differs from content", content)
			}
			if res.Message.Content == "" {
				t.Errorf("%q: empty answer", content)
			}
			for _, s := range strings.Fields(res.Message.Content) {
				if utf8.RuneCountInString(s) > maxSentenceRunes+10 {
					t.Errorf("%q: overlong piece", content)
				}
			}
		}
	}
}

func TestSplitSentences(t *testing.T) {
	got := analyze.Sentences(`Use a tool, e.g. curl. Version 2.1 is out! Is it "ready?" Yes.全文检索。完成`)
	want := []string{"Use a tool, e.g. curl.", "Version 2.1 is out!", `Is it "ready?"`, "Yes.全文检索。", "完成"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestAbstainsOnWeakEvidence: when the search reports relevance and no
// passage reaches AbstainBelow, the answer says the docs do not cover it and
// cites nothing; otherwise it quotes the relevant passages' supporting
// sentences, never one of a passage under AbstainBelow, even when it
// mentions a word of the question.
func TestAbstainsOnWeakEvidence(t *testing.T) {
	weak := "[1] Certificates (relevance 0.36)\nHost names are compared without regard to capitalization.\n\n" +
		"[2] Addons (relevance 0.10)\nA hello world addon."
	res, _ := run(t, llm.Request{Messages: toolTurn("What is the capital of France?", weak), Tools: []llm.ToolDef{searchTool}})
	if res.Message.Content != NotFoundAnswer {
		t.Errorf("weak evidence answered: %q", res.Message.Content)
	}
	strong := "[1] Certificates (relevance 0.30)\nPasswords are hashed before they are stored.\n\n" +
		"[2] Accounts (relevance 0.90)\n# Accounts > Reset password\nTo reset your password, open Settings. Passwords expire yearly.\n\n" +
		"[3] Security (relevance 0.80)\nReset links expire after one hour; your password stays the same until then."
	res, _ = run(t, llm.Request{Messages: toolTurn("How do I reset my password?", strong), Tools: []llm.ToolDef{searchTool}})
	want := "To reset your password, open Settings. [2] Passwords expire yearly. [2] " +
		"Reset links expire after one hour; your password stays the same until then. [3]"
	if got := res.Message.Content; got != want {
		t.Errorf("answer:\n got %q\nwant %q", got, want)
	}
	// The heading path says what the fragment is about; the sentence under
	// it is the answer.
	res, _ = run(t, llm.Request{Messages: toolTurn("reset password", "[1] Accounts (relevance 1.00)\n# Accounts > Reset password\nSee the form."), Tools: []llm.ToolDef{searchTool}})
	if want := "See the form. [1]"; res.Message.Content != want {
		t.Errorf("got %q, want %q", res.Message.Content, want)
	}
}

// TestAnswerQuotesChineseClauses: Chinese text chains clauses with "；", so
// the answer quotes the clause that answers, not the whole chain.
func TestAnswerQuotesChineseClauses(t *testing.T) {
	if got, want := analyze.Sentences("删除文件；删除空目录。完成！"), []string{"删除文件；", "删除空目录。", "完成！"}; !reflect.DeepEqual(got, want) {
		t.Errorf("split %q, want %q", got, want)
	}
	passages := "[1] gzip - 压缩或展开文件 (relevance 0.80)\n# 描述\n" +
		"gzip 使用 Lempel-Ziv 编码减小文件的体积；文件名保持不变；时间戳和权限也保留下来；符号链接会被忽略。"
	res, _ := run(t, llm.Request{Messages: toolTurn("如何减小文件体积？", passages), Tools: []llm.ToolDef{searchTool}})
	if want := "gzip 使用 Lempel-Ziv 编码减小文件的体积； [1]"; res.Message.Content != want {
		t.Errorf("answer:\n got %q\nwant %q", res.Message.Content, want)
	}
}

// TestAnswerIsWhatGenerateSays: Answer (used to replay stored search
// results) gives exactly the reply Generate streams for the same tool
// result, abstention included.
func TestAnswerIsWhatGenerateSays(t *testing.T) {
	for q, tool := range map[string]string{
		"How do I reset my password?":    accountPassages,
		"What is the capital of France?": "[3] Certificates (relevance 0.47)\nHost names are compared without regard to capitalization.",
		"如何减小文件体积？":                      "[1] gzip (relevance 0.80)\ngzip 减小文件的体积；文件名保持不变。",
	} {
		res, _ := run(t, llm.Request{Messages: toolTurn(q, tool), Tools: []llm.ToolDef{searchTool}})
		if got := Answer("  "+q+" ", tool); got != res.Message.Content {
			t.Errorf("%q: Answer %q, Generate %q", q, got, res.Message.Content)
		}
	}
	if got := Answer("What is the capital of France?", "[3] Certificates (relevance 0.47)\nHost names are compared without regard to capitalization."); got != NotFoundAnswer {
		t.Errorf("weak evidence answered: %q", got)
	}
}
