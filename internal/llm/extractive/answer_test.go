package extractive

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/llm"
)

// ask is the reply Generate gives to question once the search returned
// tool.
func ask(t *testing.T, question string, tool ...string) string {
	t.Helper()
	res, deltas := run(t, llm.Request{Messages: toolTurn(question, tool...), Tools: []llm.ToolDef{searchTool}})
	if joinText(deltas) != res.Message.Content {
		t.Fatalf("streamed %q, content %q", joinText(deltas), res.Message.Content)
	}
	return res.Message.Content
}

var citeRe = regexp.MustCompile(`([^\[\]]+?)\s*\[(\d+)\]`)

// checkCited fails unless every "<text> [n]" of answer quotes text that
// passage n of tool says (code fences aside), and returns the numbers cited.
func checkCited(t *testing.T, answer string, tool string) []string {
	t.Helper()
	bodies := map[string]string{}
	for _, p := range parsePassages(tool) {
		var b strings.Builder
		for _, s := range p.an.segments {
			b.WriteString(s.text + "\n")
		}
		bodies[p.num] = strings.Join(strings.Fields(b.String()), " ")
	}
	var nums []string
	for _, m := range citeRe.FindAllStringSubmatch(answer, -1) {
		quote := strings.TrimSpace(m[1])
		if strings.Contains(quote, "```") {
			quote = strings.TrimSpace(quote[strings.LastIndex(quote, "```")+3:])
		}
		body, ok := bodies[m[2]]
		if !ok {
			t.Fatalf("answer cites [%s], which no passage has: %q", m[2], answer)
		}
		if quote != "" && !strings.Contains(body, strings.Join(strings.Fields(quote), " ")) {
			t.Fatalf("[%s] does not say %q (answer %q)", m[2], quote, answer)
		}
		nums = append(nums, m[2])
	}
	return nums
}

// The README's first session: a page "# Install\n\nRun make run." asked
// "How do I install?" is answered with the sentence, not the heading.
func TestAnswerIsNotAHeading(t *testing.T) {
	got := ask(t, "How do I install?", "[1] Install (relevance 1.00)\n# Install\nRun make run.")
	if want := "Run make run. [1]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

const installPage = "[1] Installation (relevance 0.92)\n" +
	"# Installation\n" +
	"Lore ships as a single binary for Linux and macOS.\n" +
	"[...]\n" +
	"# Installation > Linux\n" +
	"To install Lore on Linux, download the archive and run the installer:\n\n" +
	"```sh\n" +
	"curl -LO https://example.com/lore-linux.tar.gz\n" +
	"tar xzf lore-linux.tar.gz && sudo ./install.sh\n" +
	"```\n\n" +
	"| OS | Package |\n|---|---|\n| Debian | lore.deb |\n\n" +
	"Yes.\n" +
	"[...]\n" +
	"# Installation > Upgrading\n" +
	"Stop the service before you upgrade.\n\n" +
	"[2] FAQ (relevance 0.55)\n" +
	"# FAQ\n" +
	"Install problems on Linux are usually missing permissions; run the installer with sudo."

// A Markdown install page: the answer quotes the sentence that answers,
// with its command, and no heading path, table pipes or filler.
func TestAnswerFromMarkdownInstallPage(t *testing.T) {
	got := ask(t, "How do I install Lore on Linux?", installPage)
	if !strings.Contains(got, "To install Lore on Linux, download the archive and run the installer: [1]\n\n```\ncurl -LO") ||
		!strings.Contains(got, "sudo ./install.sh\n```") {
		t.Errorf("answer does not quote the instruction with its command: %q", got)
	}
	for _, bad := range []string{"Installation >", "|", "Debian", "Yes.", "# ", "```sh"} {
		if strings.Contains(got, bad) {
			t.Errorf("answer holds %q: %q", bad, got)
		}
	}
	checkCited(t, got, installPage)

	// A question that does not ask how gets no code.
	if got := ask(t, "Lore Linux installer archive", installPage); strings.Contains(got, "```") || !strings.Contains(got, "[1]") {
		t.Errorf("code quoted for a question that does not ask how: %q", got)
	}

	// A long block is cut.
	long := "[1] Setup (relevance 0.90)\nTo install Lore, run these commands:\n```\n" +
		strings.Repeat("echo step\n", 40) + "```"
	got = ask(t, "How do I install Lore?", long)
	if n := strings.Count(got, "echo step"); n == 0 || n > maxCodeLines || !strings.Contains(got, "…") {
		t.Errorf("code block not bounded (%d lines): %q", n, got)
	}
}

const twoPages = "[1] Install (relevance 0.62)\n# Install\n" +
	"Download the archive and run lore setup to install Lore. The setup asks for an admin email.\n\n" +
	"[2] Backups (relevance 0.45)\n# Backups\n" +
	"To back up the database, run lore backup with a target file. Backups are compressed."

// A question that asks two things gets a sentence for each, from the page
// that answers it, even when the search's relevance of that page (against
// the whole question) is under AbstainBelow.
func TestAnswerTwoPartQuestion(t *testing.T) {
	for _, q := range []string{
		"How do I install Lore, and how do I back up the database?",
		"How do I install Lore? How do I back up the database?",
	} {
		got := ask(t, q, twoPages)
		want := "Download the archive and run lore setup to install Lore. [1] " +
			"To back up the database, run lore backup with a target file. [2]"
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", q, got, want)
		}
	}
	// Asked the other way round, the parts are answered in that order.
	got := ask(t, "How do I back up the database, and how do I install Lore?", twoPages)
	if !strings.HasPrefix(got, "To back up the database") || !strings.Contains(got, "[1]") {
		t.Errorf("parts out of order: %q", got)
	}
	// One part alone never cites a passage under AbstainBelow.
	alone := strings.Replace(twoPages, "0.62", "0.10", 1)
	if got := ask(t, "How do I back up the database?", alone); got != NotFoundAnswer {
		t.Errorf("answered from a passage under AbstainBelow: %q", got)
	}
	// "X or Y" asks about both.
	or := "[1] Storage (relevance 0.70)\nSQLite is the default database and needs no setup.\n[...]\n" +
		"PostgreSQL is chosen with DATABASE_URL and suits several API processes."
	got = ask(t, "Should I use SQLite or PostgreSQL?", or)
	if !strings.Contains(got, "SQLite is the default") || !strings.Contains(got, "PostgreSQL is chosen") {
		t.Errorf("one side of the question unanswered: %q", got)
	}
}

// An answer quotes sentences of every relevant passage, not only the
// first, best supported first, each cited with its own passage's number
// (the numbers the search gave, which continue across a thread's turns).
func TestAnswerDrawsOnAllPassages(t *testing.T) {
	tool := "[6] Upgrading (relevance 0.80)\n# Upgrading\nRead the release notes first.\n" +
		"To upgrade Lore, replace the binary and restart the service.\n\n" +
		"[7] Release notes (relevance 0.75)\nVersion 2.1 adds dark mode. Upgrade Lore to 2.1 with lore upgrade --to 2.1 after a backup.\n\n" +
		"[8] Mirror (relevance 0.70)\nTo upgrade Lore, replace the binary and restart the service."
	got := ask(t, "How do I upgrade Lore?", tool)
	want := "To upgrade Lore, replace the binary and restart the service. [6] " +
		"Upgrade Lore to 2.1 with lore upgrade --to 2.1 after a backup. [7]"
	if got != want {
		t.Errorf("answer:\n got %q\nwant %q", got, want)
	}
	checkCited(t, got, tool)
}

// An off-topic question is refused, and the refusal cites nothing.
func TestAnswerOffTopic(t *testing.T) {
	tool := strings.Replace(strings.Replace(installPage, "0.92", "0.12", 1), "0.55", "0.08", 1)
	got := ask(t, "What is the capital of France?", tool)
	if got != NotFoundAnswer || strings.Contains(got, "[") {
		t.Errorf("off-topic question answered: %q", got)
	}
}

const rebasePage = "[1] git-rebase (relevance 0.41)\n" +
	"# git-rebase > Resolving conflicts\n" +
	"When git rebase stops because of a conflict, edit the conflicted files, stage them with git add, and run git rebase --continue.\n" +
	"To give up and return to the original branch, run git rebase --abort.\n\n" +
	"[2] git-commit (relevance 0.20)\nRecord changes to the repository with git commit."

// A Chinese question naming English commands is answered from the English
// page that holds them: its Chinese words cannot be in that page, so they
// neither count for nor against it.
func TestAnswerMixedScriptQuestion(t *testing.T) {
	got := ask(t, "git rebase 的时候遇到冲突怎么办?", rebasePage)
	if !strings.HasPrefix(got, "When git rebase stops because of a conflict") || strings.Contains(got, "[2]") {
		t.Errorf("answer = %q, want the rebase page's sentences", got)
	}
	checkCited(t, got, rebasePage)
	// Its English words must still be there.
	if got := ask(t, "docker 的时候遇到冲突怎么办?", rebasePage); got != NotFoundAnswer {
		t.Errorf("answered without the question's English terms: %q", got)
	}
	// A Chinese page is still judged on the Chinese words too.
	zh := "[1] git-rebase (relevance 0.30)\n本页说明 git rebase 的用法；变基会改写提交历史。"
	if got := ask(t, "git rebase 的时候遇到冲突怎么办?", zh); got != NotFoundAnswer {
		t.Errorf("a Chinese page without the question's Chinese words answered: %q", got)
	}
}

// The same sentence on two pages is quoted once.
func TestAnswerSkipsNearDuplicates(t *testing.T) {
	tool := "[1] Logs (relevance 0.90)\nThe server writes its logs to /var/log/lore every day.\n\n" +
		"[2] Logs (copy) (relevance 0.90)\nThe server writes its logs to /var/log/lore every day!"
	if got, want := ask(t, "Where does the server write its logs?", tool), "The server writes its logs to /var/log/lore every day. [1]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Source scores are the passages' support for the question: in [0,1],
// different for a page that answers and one that only mentions, and for a
// mixed-script question judged on the words a page can hold.
func TestSupport(t *testing.T) {
	titles := []string{"Upgrading", "Release notes", "Dark mode", "Contact"}
	contents := []string{
		"# Upgrading\nTo upgrade Lore, replace the binary and restart the service.",
		"Lore 2.1 adds dark mode.",
		"# Dark mode\nSwitch themes in Settings.",
		"Write to the team by email.",
	}
	got := Support("How do I upgrade Lore?", titles, contents)
	if got[0] != 1 || !(got[1] > 0 && got[1] < got[0]) || got[3] != 0 {
		t.Errorf("support = %v, want 1 for the answer, less for a mention, 0 for an unrelated page", got)
	}
	for _, s := range got {
		if s < 0 || s > 1 {
			t.Errorf("support %v out of [0,1]", got)
		}
	}
	// A term only in the heading or title counts half.
	if got := Support("dark mode themes", titles[2:3], contents[2:3]); got[0] <= 0.5 || got[0] >= 1 {
		t.Errorf("heading-supported passage = %v", got)
	}
	mixed := Support("git rebase 的时候遇到冲突怎么办?", []string{"git-rebase", "git-commit"},
		[]string{"When git rebase stops because of a conflict, run git rebase --continue.", "Record changes with git commit."})
	if mixed[0] != 1 || mixed[1] <= 0 || mixed[1] >= mixed[0] {
		t.Errorf("mixed-script support = %v", mixed)
	}
	if got := Support("", titles, contents); len(got) != 4 || got[0] != 0 {
		t.Errorf("empty question support = %v", got)
	}
}

// Bad input never fails: an empty, blank, 10,000-character or binary
// question gets an abstention or a bounded answer.
func TestBadQuestions(t *testing.T) {
	for name, q := range map[string]string{
		"empty":  "",
		"blank":  " \t\n ",
		"long":   strings.Repeat("install lore on linux ", 455),
		"binary": "\x00\xff\xfe\x01 install \x80\x81",
	} {
		t.Run(name, func(t *testing.T) {
			got := ask(t, q, installPage)
			if got == "" || utf8.RuneCountInString(got) > maxAnswerSentences*(maxSentenceRunes+8)+maxCodeRunes+20 {
				t.Errorf("answer %q", got)
			}
			if strings.TrimSpace(q) == "" {
				res, err := New().Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: q}}, Tools: []llm.ToolDef{searchTool}}, nil)
				if err != nil || len(res.Message.ToolCalls) != 0 || res.Message.Content != NotFoundAnswer {
					t.Errorf("blank question: %+v, %v", res, err)
				}
			}
			Support(q, []string{"t"}, []string{installPage})
		})
	}
}

// The search's first relevant passage is cited first, even when a later
// passage has a sentence that repeats more of the question's words.
func TestAnswerLeadsWithTheFirstRelevantPassage(t *testing.T) {
	tool := "[1] Backups (relevance 0.70)\nCopy the data directory while the service is stopped to keep a copy of the data.\n\n" +
		"[2] Glossary (relevance 0.90)\nA backup of the data is a copy of the data directory kept for restoring."
	got := ask(t, "How do I make a backup copy of the data?", tool)
	if !strings.HasPrefix(got, "Copy the data directory") || !strings.Contains(got, "[1]") {
		t.Errorf("answer %q does not lead with passage [1]", got)
	}
	if i, j := strings.Index(got, "[1]"), strings.Index(got, "[2]"); j >= 0 && j < i {
		t.Errorf("answer %q cites [2] before [1]", got)
	}
	checkCited(t, got, tool)
}

// A later relevant passage leads when one of its sentences states clearly
// more of the question than any sentence of the first (leadMargin), and its
// citation comes first in the answer.
func TestAnswerLeadsWithASentenceThatStatesTheQuestion(t *testing.T) {
	tool := "[1] Path (relevance 0.80)\nResolves a sequence of paths into an absolute path. If no path is given, the current working directory is used.\n\n" +
		"[2] OS (relevance 1.00)\nReturns the string path of the current user's home directory."
	got := ask(t, "Where is the current user's home directory?", tool)
	if !strings.HasPrefix(got, "Returns the string path of the current user's home directory. [2]") {
		t.Errorf("answer %q does not lead with passage [2]", got)
	}
	if i, j := strings.Index(got, "[1]"), strings.Index(got, "[2]"); i >= 0 && i < j {
		t.Errorf("answer %q cites [1] before [2]", got)
	}
	checkCited(t, got, tool)
}

// A code block on its own does not take the lead from the first relevant
// passage, however many of the question's words its identifiers and
// comments say: it states no answer.
func TestAnswerDoesNotLeadWithAnotherPassagesCode(t *testing.T) {
	tool := "[1] Net (relevance 0.90)\nThe net module provides an asynchronous network API for stream-based servers.\n\n" +
		"[2] Performance hooks (relevance 1.00)\n```js\nconst net = require('node:net');\n// create a TCP server that listens on a port\nconst tcp = net.createServer();\ntcp.listen(port);\n```"
	got := ask(t, "How do I create a TCP server that listens on a port?", tool)
	if !strings.HasPrefix(got, "The net module provides") {
		t.Errorf("answer %q does not lead with passage [1]", got)
	}
	checkCited(t, got, tool)
}

// Link targets and image sources are not words a reader sees: a "back to
// top" image link, or a bar of links, says nothing, while a sentence whose
// words are links does.
func TestSubstantiveCountsVisibleWords(t *testing.T) {
	for s, want := range map[string]bool{
		"[![top](../../images/up.gif)](#page-header)":                         false,
		"[Modules](../mod/index.html) | [FAQ](faq.html)":                      false,
		"Use [mod_rewrite](mod_rewrite.html) for [URL rewriting](intro.html)": true,
		"Compression is enabled by the DEFLATE filter.":                       true,
	} {
		if got := substantive(s); got != want {
			t.Errorf("substantive(%q) = %v, want %v", s, got, want)
		}
	}
}

// A question mark inside a URL's query does not end a part of the question.
func TestQuestionPartsIgnoreURLQueries(t *testing.T) {
	if got := questionParts("How do I change /product/42 into /item.php?id=42 behind the scenes?"); len(got) != 1 {
		t.Errorf("a URL's query split the question: %v", got)
	}
	if got := questionParts("How do I install Lore? How do I back up the database?"); len(got) != 2 {
		t.Errorf("two questions gave %d parts: %v", len(got), got)
	}
}

// "or" between alternatives keeps one ask; between two questions' worth of
// words it starts a second part.
func TestQuestionPartsOr(t *testing.T) {
	for q, want := range map[string]int{
		"How do I add or remove an HTTP response header?":              1,
		"How do I check whether a file exists or is accessible?":       1,
		"Should I use WAL journal mode or a rollback journal on disk?": 2,
		"How do I rotate the log files or compress old access logs?":   2,
	} {
		if got := questionParts(q); len(got) != want {
			t.Errorf("questionParts(%q) = %v, want %d parts", q, got, want)
		}
	}
}

// A one-word alternative ("or is accessible") does not make a second part
// whose best sentence, anywhere, would lead: the search's first page does.
func TestAnswerOrAlternativeKeepsTheFirstPage(t *testing.T) {
	tool := "[1] File system (relevance 0.90)\n# File system > fs.access(path[, mode], callback)\n" +
		"The following examples check if package.json exists, and if it is readable or writable.\n\n" +
		"[2] Modules (relevance 0.85)\n# Modules > Customization Hooks\n" +
		"This simple check for whether the url names a file path that may not exist works for most projects."
	got := ask(t, "How do I check whether a file exists or is accessible?", tool)
	if nums := checkCited(t, got, tool); len(nums) == 0 || nums[0] != "1" {
		t.Fatalf("answer %q does not lead with the first page", got)
	}
}

// When the relevant passages' best sentence states under half of the
// question, the search's first passage leads even below the relevance bar;
// with a sentence that states more, the relevant passage keeps the lead.
func TestAnswerWeakSentenceDefersToTheSearchsFirst(t *testing.T) {
	q := "How do I tell browsers to keep images for a month before asking again?"
	weak := "[1] mod_expires (relevance 0.37)\n# mod_expires > ExpiresByType\nAll images expire after one month with this directive.\n\n" +
		"[2] mod_usertrack (relevance 0.60)\n# mod_usertrack > CookieExpires\nIf this directive is not used, cookies last only for the current browser session."
	if nums := checkCited(t, ask(t, q, weak), weak); len(nums) == 0 || nums[0] != "1" {
		t.Fatalf("a weak sentence of [2] led instead of the search's first: %v", nums)
	}
	strong := "[1] mod_expires (relevance 0.37)\n# mod_expires > ExpiresByType\nAll images expire after one month with this directive.\n\n" +
		"[2] Caching guide (relevance 0.60)\n# Caching guide > Freshness\nBrowsers keep images for a month before they ask the server again."
	if nums := checkCited(t, ask(t, q, strong), strong); len(nums) == 0 || nums[0] != "2" {
		t.Fatalf("the relevant passage's sentence that states the question did not lead: %v", nums)
	}
}

// A reference table's row that describes (a cell of five words or more) is
// quoted like a sentence; a row of names and values is not.
func TestAnswerQuotesADescribingTableRow(t *testing.T) {
	page := "[1] RewriteRule Flags (relevance 0.8)\n" +
		"# RewriteRule Flags > Flag Quick Reference\n" +
		"| Flag | Long form | Meaning |\n|---|---|---|\n" +
		"| L | last | Stop the rewriting process immediately and apply no more rules. |\n" +
		"| R | redirect | Forces an external redirect with an optional status code. |\n"
	got := ask(t, "What does the last flag do to the rewriting process?", page)
	if !strings.Contains(got, "Stop the rewriting process immediately") || !strings.Contains(got, "[1]") {
		t.Errorf("the describing row is not the answer: %q", got)
	}
	checkCited(t, got, page)
}

// TestListItemsAndCommentsAsTheReaderSeesThem: a list item's wrapped lines
// are one item (the answer quoted "changes the automatic ROWID …", the second
// line of one), a quote's ">" lines one text, and an HTML comment or a link
// reference definition, which the page never shows, is not quoted (Node.js's
// docs keep their change history as YAML in comments, and end each page with
// its link definitions).
func TestListItemsAndCommentsAsTheReaderSeesThem(t *testing.T) {
	segs := segments("- If the AUTOINCREMENT keyword appears after INTEGER PRIMARY KEY, that\n  changes the automatic ROWID assignment algorithm.\n- Second item.\n\n" +
		"> A quoted sentence that\n> wraps.\n\n" +
		"<!-- YAML\nchanges:\n  - version: v18.0.0\n    pr-url: https://github.com/nodejs/node/pull/41678\n-->\n\n" +
		"Text <!-- hidden --> shown. Write `<!-- x -->` to comment.\n\n[`Agent`]: #class-httpsagent\n[`URL`]: url.md#the-whatwg-url-api \"WHATWG\"")
	var got []string
	for _, s := range segs {
		got = append(got, s.text)
	}
	want := []string{
		"If the AUTOINCREMENT keyword appears after INTEGER PRIMARY KEY, that changes the automatic ROWID assignment algorithm.",
		"Second item.",
		"A quoted sentence that wraps.",
		"Text shown. Write `<!-- x -->` to comment.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("segments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	page := "[1] Timers (relevance 0.9)\n# Timers > setInterval\n<!-- YAML\nchanges:\n  - version: v18.0.0\n    description: Passing an invalid callback to the `callback` argument now throws.\n-->\n\nSchedules repeated execution of `callback` every `delay` milliseconds.\n"
	if a := ask(t, "How do I run a callback every few milliseconds?", page); strings.Contains(a, "version") || strings.Contains(a, "invalid callback") || !strings.Contains(a, "Schedules repeated execution") {
		t.Errorf("answer %q", a)
	}
}

// TestAnswerLinksAsThePageShowsThem: a reference link's definition and a
// relative link's target are not in the answer, so it keeps their text; an
// absolute link and an image stay as they are.
func TestAnswerLinksAsThePageShowsThem(t *testing.T) {
	for in, want := range map[string]string{
		"As a [stream][] that is readable, see [`EventEmitter`][ee].":                        "As a stream that is readable, see `EventEmitter`.",
		"Use the [L flag](../rewrite/flags.html#flag_l \"see\") or [this](#accessfilename).": "Use the L flag or this.",
		"Read [RFC 7512](https://www.rfc-editor.org/rfc/rfc7512) and ![logo](logo.png).":     "Read [RFC 7512](https://www.rfc-editor.org/rfc/rfc7512) and ![logo](logo.png).",
		"No links [here] at all.": "No links [here] at all.",
	} {
		if got := shownLinks(in); got != want {
			t.Errorf("shownLinks(%q) = %q, want %q", in, got, want)
		}
	}
	page := "[1] Streams (relevance 0.9)\n# Stream > Readable\nA readable [stream][] emits [`'data'`][] events as chunks of data arrive from the [source](../source.html).\n"
	if a := ask(t, "Which event does a readable stream emit when data arrives?", page); strings.Contains(a, "][") || strings.Contains(a, "](") || !strings.Contains(a, "A readable stream emits `'data'` events") {
		t.Errorf("answer %q", a)
	}
}
