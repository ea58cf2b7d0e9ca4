package retrieve

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/lru"
	"github.com/lorekb/lore/internal/vector"
)

// resetChunkWords empties the process's cache of chunk words.
func resetChunkWords() {
	chunkWords = lru.New[chunkKey, []string](maxCachedChunks, maxCachedChunkBytes)
}

// freshSectionWords is sectionWords as it read every chunk's fields anew,
// before the cache.
func freshSectionWords(pool, shown []Result, qWords []string, all bool) map[section]*sectionTerms {
	shared := chunkWords
	defer func() { chunkWords = shared }()
	resetChunkWords()
	return sectionWords(pool, shown, qWords, all)
}

// wordPool is a recall pool of several sections, one of them cut into two
// chunks, another with more words than a section keeps (maxSectionWords),
// one in Chinese, and two chunks alike in all but their heading.
func wordPool() (pool, shown []Result) {
	var many strings.Builder
	for i := range maxSectionWords + 500 {
		fmt.Fprintf(&many, "word%c%c%c ", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26)
		if i%7 == 0 {
			many.WriteString("install lore again ")
		}
	}
	hits := []vector.Hit{
		{DocumentID: 1, Title: "Install guide", Heading: "Linux", Text: "Run the installer, then restart the server. Install it again to upgrade."},
		{DocumentID: 1, Title: "Install guide", Heading: "Linux", Text: "The installer returns the path of the binary it wrote."},
		{DocumentID: 1, Title: "Install guide", Heading: "macOS", Text: "Run the installer, then restart the server. Install it again to upgrade."},
		{DocumentID: 2, Title: "Glossary", Heading: "Words", Text: many.String()},
		{DocumentID: 3, Title: "知识库", Heading: "文档 > 安装", Text: "如何安装和升级知识库。运行安装程序。"},
		{DocumentID: 4, Title: "Backups", Text: "Restore a backup with the restore command."},
	}
	for _, h := range hits {
		pool = append(pool, Result{Hit: h})
	}
	return pool, []Result{pool[0], pool[2], pool[3], pool[4]}
}

// The sections' words are the same from cached chunk words as from fresh
// ones, cold, warm and after other questions, with or without the words
// for matching by meaning; and they are what the chunks' fields say.
func TestCachedChunkWordsJudgeAsFresh(t *testing.T) {
	resetChunkWords()
	pool, shown := wordPool()
	questions := []string{"How do I install Lore again?", "restart the installer path", "如何安装知识库", "wordaaa wordzzf restore", ""}
	for round := range 3 {
		for _, q := range questions {
			qWords := dedupe(analyze.Words(q))
			for _, all := range []bool{false, true} {
				got := sectionWords(pool, shown, qWords, all)
				if want := freshSectionWords(pool, shown, qWords, all); !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d, %q (all %v): sections differ from those of fresh words", round, q, all)
				}
				for _, st := range got {
					if len(st.words) > maxSectionWords {
						t.Fatalf("%q: a section keeps %d words", q, len(st.words))
					}
				}
			}
		}
	}
	got := sectionWords(pool, shown, []string{"path", "upgrad", "restor"}, true)
	if l := got[sectionOf(pool[0].Hit)]; !l.have["path"] || !l.have["upgrad"] || l.have["restor"] || !l.words["binari"] {
		t.Errorf("the Linux section holds %v and %v", l.have, l.words)
	}
	if g := got[sectionOf(pool[3].Hit)]; len(g.words) != maxSectionWords || !g.words["wordaaa"] || !g.words["instal"] {
		t.Errorf("the glossary keeps %d words, not its first %d", len(g.words), maxSectionWords)
	}
}

// The cache holds no more than its bound in bytes, however many chunks go
// through it, and does not keep a chunk that would take a sixteenth of it
// (internal/lru tests the counting itself).
func TestWordCacheBound(t *testing.T) {
	const maxBytes = 16 << 10
	shared := chunkWords
	defer func() { chunkWords = shared }()
	chunkWords = lru.New[chunkKey, []string](1000, maxBytes)
	for i := range 300 {
		wordsOf(vector.Hit{Title: fmt.Sprint("Page ", i), Text: fmt.Sprintf("Part %d of the guide sets up tool%d.", i, i)})
		if chunkWords.Used() > maxBytes {
			t.Fatalf("after %d chunks the cache holds %d bytes, over %d", i+1, chunkWords.Used(), maxBytes)
		}
	}
	if n := chunkWords.Len(); n == 0 || n == 300 {
		t.Errorf("%d entries of 300 chunks within %d bytes", n, maxBytes)
	}
	huge := vector.Hit{Title: "Huge", Text: strings.Repeat("a long text ", 200)}
	if wordsOf(huge); func() bool { _, ok := chunkWords.Get(chunkKey{huge.Title, huge.Heading, huge.Text}); return ok }() {
		t.Errorf("a chunk of over a sixteenth of the bound was cached")
	}
}

// benchPool is a recall pool cut from this repository's documentation:
// every section of five pages in chunks of at most 1.5 KB, under the
// section's heading, and the first chunk of each page shown.
func benchPool(b *testing.B) (pool, shown []Result) {
	b.Helper()
	for d, name := range []string{"chat", "mcp", "retrieval", "sync", "security"} {
		raw, err := os.ReadFile("../../docs/" + name + ".md")
		if err != nil {
			b.Skip(err)
		}
		for _, s := range strings.Split(string(raw), "\n## ")[1:] {
			heading, body, _ := strings.Cut(s, "\n")
			for len(body) > 0 {
				n := len(body)
				if n > 1500 {
					if n = strings.LastIndexByte(body[:1500], '\n') + 1; n == 0 {
						n = 1500
					}
				}
				pool = append(pool, Result{Hit: vector.Hit{DocumentID: int64(d), Title: name, Heading: heading, Text: body[:n]}})
				body = body[n:]
			}
		}
		for _, r := range pool {
			if r.Hit.DocumentID == int64(d) {
				shown = append(shown, r)
				break
			}
		}
	}
	return pool, shown
}

// BenchmarkSectionWords is the section words of one search: cold reads
// every chunk anew (a cache emptied before each search), warm finds them
// cached, as popular chunks are.
func BenchmarkSectionWords(b *testing.B) {
	pool, shown := benchPool(b)
	qWords := dedupe(analyze.Words("How does a chat turn search the documentation?"))
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(b *testing.B) {
			for b.Loop() {
				if !warm {
					resetChunkWords()
				}
				sectionWords(pool, shown, qWords, true)
			}
		})
	}
}
