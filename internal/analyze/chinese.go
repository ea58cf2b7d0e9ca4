package analyze

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"log/slog"
	"sync"
	"unicode/utf8"

	"github.com/go-ego/gse"
)

// zhDict is the segmenter's dictionary: the simplified-Chinese words of
// gse's dictionary (data/dict/zh/s_1.txt, itself from jieba) made only of Han
// characters and seen at least 5 times, with their frequencies. Keeping the
// rarer two thirds out halves load time and memory (about 50 MB instead of
// 135 MB) and changes few segmentations of documentation text.
//
//go:embed zh_dict.txt.gz
var zhDict []byte

// chineseStop are Chinese function words and question words: particles,
// pronouns, and the "how / what / can I" a question is built from.
var chineseStop = toSet(`的 了 是 在 和 与 及 或 而 并 也 就 都 又 还 之 其 该 此 这 那 这个 那个 这些 那些
我 你 您 他 她 它 我们 你们 他们 它们 自己 吗 呢 吧 啊 呀 嘛 着 过 个 些 把 被 对 给 让
如何 怎么 怎样 怎么样 什么 哪 哪个 哪些 哪里 为什么 为何 是否 能否 可以 能 能够 会 要 想 需要 请 请问
一下 一个 一种 有 没有 吗 么 如果 因为 所以 但是 但 然后 以及 或者 等 等等 时 时候 里 中 上 下`)

var (
	segOnce sync.Once
	seg     *gse.Segmenter // nil when the dictionary failed to load
)

// segmenter loads the dictionary on first use (about half a second), so a
// process that never sees Chinese text never pays for it.
func segmenter() *gse.Segmenter {
	segOnce.Do(func() {
		s, err := loadSegmenter()
		if err != nil {
			slog.Error("analyze: Chinese dictionary did not load; using character bigrams", "err", err)
			return
		}
		seg = s
	})
	return seg
}

// loadSegmenter builds a segmenter over the embedded dictionary.
func loadSegmenter() (*gse.Segmenter, error) {
	zr, err := gzip.NewReader(bytes.NewReader(zhDict))
	if err != nil {
		return nil, err
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	s := &gse.Segmenter{SkipLog: true}
	if err := s.LoadDictStr(string(text)); err != nil {
		return nil, err
	}
	return s, nil
}

// cjkTerms emits the terms of one run of CJK characters: dictionary words
// (and with chars their characters) for its Chinese parts, character
// bigrams for kana and Hangul (or when the dictionary is missing).
func cjkTerms(run string, chars bool, emit func(string)) {
	start, han := 0, false
	for i, r := range run {
		if h := isHan(r); h != han || i == 0 {
			if i > start {
				scriptTerms(run[start:i], han, chars, emit)
			}
			start, han = i, h
		}
	}
	scriptTerms(run[start:], han, chars, emit)
}

// scriptTerms emits the terms of a run of one kind: Han or other CJK.
func scriptTerms(run string, han, chars bool, emit func(string)) {
	s := segmenter()
	if !han || s == nil {
		bigrams(run, emit)
		return
	}
	// Characters the dictionary does not know come out one by one (names,
	// traditional or Japanese forms); adjacent ones also give their bigram,
	// so a multi-character unknown word still matches as a unit.
	prev := ""
	for _, w := range s.CutSearch(run, false) {
		if chineseStop[w] {
			prev = ""
			continue
		}
		single := utf8.RuneCountInString(w) == 1
		if single && prev != "" {
			emit(prev + w)
		}
		if single {
			prev = w
		} else {
			prev = ""
		}
		emit(w)
		if chars && !single {
			wordChars(w, emit)
		}
	}
}

// wordChars emits each character of the Chinese word w. Characters that
// are function words on their own (时 of 时间) are kept: inside a word they
// carry its meaning, and measured on make eval dropping them ranked worse.
func wordChars(w string, emit func(string)) {
	for i, r := range w {
		emit(w[i : i+utf8.RuneLen(r)])
	}
}

// bigrams emits every pair of adjacent characters of run, or the character
// itself when the run has only one.
func bigrams(run string, emit func(string)) {
	if utf8.RuneCountInString(run) == 1 {
		emit(run)
		return
	}
	prev := -1
	for i := range run {
		if prev >= 0 {
			_, size := utf8.DecodeRuneInString(run[i:])
			emit(run[prev : i+size])
		}
		prev = i
	}
}
