package analyze

import (
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTermsEnglish(t *testing.T) {
	cases := map[string][]string{
		"How do I restore a backup?":        {"restor", "backup"},
		"Restoring backups":                 {"restor", "backup"},
		"What is the capital of France?":    {"capit", "franc"},
		"The server's CONNECTIONS, closed.": {"server", "connect", "close"},
		"how do I it":                       nil,
		"":                                  nil,
		"node v22 uses utf8":                {"node", "v22", "use", "utf8"},
	}
	for in, want := range cases {
		if got := Terms(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Terms(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTermsIdentifiers(t *testing.T) {
	got := Terms("fs.readFileSync(path) and HTTPServer")
	want := []string{"fs", "readfilesync", "read", "file", "sync", "path", "httpserver", "http", "server"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// The question's words meet the identifier's parts.
	q := Terms("read a file synchronously")
	for _, w := range []string{"read", "file"} {
		if !slices.Contains(q, w) {
			t.Errorf("query terms %q lack %q", q, w)
		}
	}
}

func TestTermsChinese(t *testing.T) {
	got := Terms("如何恢复备份文件？")
	for _, w := range []string{"恢复", "备份", "文件"} {
		if !slices.Contains(got, w) {
			t.Errorf("Terms = %q, lacks %q", got, w)
		}
	}
	if slices.Contains(got, "如何") {
		t.Errorf("question word kept: %q", got)
	}
	// Search mode: a long dictionary word also yields the words inside it.
	fs := Terms("显示文件系统的磁盘使用情况")
	for _, w := range []string{"文件系统", "文件", "系统", "磁盘"} {
		if !slices.Contains(fs, w) {
			t.Errorf("Terms = %q, lacks %q", fs, w)
		}
	}
	if slices.Contains(fs, "的") {
		t.Errorf("particle kept: %q", fs)
	}
	// Characters the dictionary lacks also give their bigram, so a
	// traditional-script word matches as a unit.
	if got := Terms("東京の天気"); !slices.Contains(got, "東京") || !slices.Contains(got, "天気") {
		t.Errorf("unknown Han word: %q", got)
	}
	// Mixed scripts split at the script change.
	mixed := Terms("ls命令列出目录")
	if mixed[0] != "ls" || !slices.Contains(mixed, "目录") {
		t.Errorf("mixed = %q", mixed)
	}
}

// TestTermsChineseCharacters: a Chinese word also gives its characters, so
// paraphrases that share characters match; Words leaves them out.
func TestTermsChineseCharacters(t *testing.T) {
	got := Terms("查看最后几行")
	for _, w := range []string{"查看", "最后", "几行", "查", "看", "最", "后", "几", "行"} {
		if !slices.Contains(got, w) {
			t.Errorf("Terms = %q, lacks %q", got, w)
		}
	}
	if words := Words("查看最后几行"); !reflect.DeepEqual(words, []string{"查看", "最后", "几行"}) {
		t.Errorf("Words = %q, want the words only", words)
	}
	// English and single-character words are unchanged.
	if got := Words("ls 命令"); !reflect.DeepEqual(got, Terms("ls 命令")[:2]) {
		t.Errorf("Words(ls 命令) = %q, Terms = %q", got, Terms("ls 命令"))
	}
	var each []string
	EachWord("读取文件", func(t string) { each = append(each, t) })
	if !reflect.DeepEqual(each, Words("读取文件")) {
		t.Errorf("EachWord %q != Words %q", each, Words("读取文件"))
	}
}

func TestTermsKanaHangulBigrams(t *testing.T) {
	if got, want := Terms("ファイル"), []string{"ファ", "ァイ", "イル"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kana: %q, want %q", got, want)
	}
	if got, want := Terms("한"), []string{"한"}; !reflect.DeepEqual(got, want) {
		t.Errorf("hangul: %q, want %q", got, want)
	}
}

func TestTermsBoundsAndGarbage(t *testing.T) {
	long := strings.Repeat("a", 10000)
	got := Terms(long)
	if len(got) != 1 || len(got[0]) > MaxWordBytes {
		t.Fatalf("long word: %d terms, first %d bytes", len(got), len(got[0]))
	}
	// Invalid UTF-8 and control bytes never panic and give no junk terms.
	bin := string([]byte{0xff, 0xfe, 0, 1, 2, 'o', 'k', 0xc3})
	if got := Terms(bin); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Errorf("binary: %q", got)
	}
	// A cut never splits a multi-byte rune.
	for _, term := range Terms(strings.Repeat("é", 100)) {
		if !strings.HasPrefix(strings.Repeat("é", 100), term) {
			t.Errorf("cut term %q", term)
		}
	}
}

func TestEachMatchesTerms(t *testing.T) {
	text := "Installing Node.js 在 Linux 上安装 readFile"
	var each []string
	Each(text, func(s string) { each = append(each, s) })
	if !reflect.DeepEqual(each, Terms(text)) {
		t.Errorf("Each %q != Terms %q", each, Terms(text))
	}
}

func TestIsCJK(t *testing.T) {
	for _, r := range "中文ひらカナ한ー" {
		if !IsCJK(r) {
			t.Errorf("IsCJK(%q) = false", r)
		}
	}
	for _, r := range "aZ9é,。 " {
		if IsCJK(r) {
			t.Errorf("IsCJK(%q) = true", r)
		}
	}
}

func TestIsStopWord(t *testing.T) {
	for _, w := range []string{"the", "how", "的", "如何"} {
		if !IsStopWord(w) {
			t.Errorf("%q is not a stop word", w)
		}
	}
	if IsStopWord("backup") || IsStopWord("备份") {
		t.Error("content word treated as stop word")
	}
}

// TestSegmenterCost reports what the Chinese dictionary costs a process, and
// fails if it grows far beyond what the package comment promises.
func TestSegmenterCost(t *testing.T) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	s, err := loadSegmenter()
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(s)
	mb := float64(m1.HeapAlloc-m0.HeapAlloc) / 1e6
	t.Logf("Chinese dictionary: loaded in %v, %.1f MB heap", took, mb)
	if mb > 80 {
		t.Errorf("dictionary takes %.1f MB", mb)
	}
}

func BenchmarkTermsEnglish(b *testing.B) {
	text := strings.Repeat("The fs.readFile() method asynchronously reads the entire contents of a file. ", 20)
	for b.Loop() {
		Terms(text)
	}
}

func BenchmarkTermsChinese(b *testing.B) {
	segmenter()
	text := strings.Repeat("显示文件系统的磁盘使用情况，如何恢复备份文件。", 20)
	for b.Loop() {
		Terms(text)
	}
}

// The fast path of wordTerms (mayHaveParts false) must only skip words that
// camelParts would give whole.
func TestMayHavePartsNeverHidesAPart(t *testing.T) {
	for _, w := range []string{"install", "Install", "readFileSync", "HTTPServer", "iOS", "x", "X", "ABC", "a1B", "Über", "naïveCase", "snake_case", "v2", "IPv6"} {
		if parts := camelParts(w); len(parts) > 1 && !mayHaveParts(w) {
			t.Errorf("%q: camelParts gives %q but mayHaveParts says none", w, parts)
		}
	}
	if mayHaveParts("install") || mayHaveParts("Install") {
		t.Error("plain words must take the fast path")
	}
}
