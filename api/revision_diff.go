package api

import (
	"fmt"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// RevisionDiff is the line diff of two revisions of a document: from the
// older side (From, null for the diff from an empty document) to To.
type RevisionDiff struct {
	DocumentID   int64         `json:"document_id"`
	From         *RevisionInfo `json:"from"`
	To           RevisionInfo  `json:"to"`
	TitleChanged bool          `json:"title_changed"`
	Added        int           `json:"added" doc:"lines only in to"`
	Removed      int           `json:"removed" doc:"lines only in from"`
	Hunks        []DiffHunk    `json:"hunks"`
	Unified      string        `json:"unified" doc:"the hunks as a unified diff"`
	Truncated    bool          `json:"truncated" doc:"more lines changed than are listed (added and removed still count all)"`
}

// DiffHunk is a run of changes with up to three lines of context on each
// side; starts are 1-based line numbers (0 with no lines on that side).
type DiffHunk struct {
	OldStart int        `json:"old_start"`
	OldLines int        `json:"old_lines"`
	NewStart int        `json:"new_start"`
	NewLines int        `json:"new_lines"`
	Lines    []DiffLine `json:"lines"`
}

// DiffLine is one line of a hunk, without its line break.
type DiffLine struct {
	Op   string `json:"op" enum:"equal,insert,delete"`
	Text string `json:"text"`
}

const (
	diffContext = 3
	// diffMaxLines bounds the lines a diff lists: a document rewritten
	// whole still answers in a bounded body.
	diffMaxLines = 5000
	// diffTimeout bounds the refinement of the line diff: past it the
	// library returns a correct but coarser diff.
	diffTimeout = time.Second
)

type diffOp struct {
	op   string
	text string
}

// lineDiff fills out's counts, hunks and unified text with the line diff of
// a and b (Myers' algorithm over lines, go-diff).
func lineDiff(out *RevisionDiff, a, b, labelA, labelB string) {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = diffTimeout
	ra, rb, lines := dmp.DiffLinesToRunes(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(ra, rb, false), lines)
	var ops []diffOp
	for _, d := range diffs {
		op := "equal"
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = "insert"
		case diffmatchpatch.DiffDelete:
			op = "delete"
		}
		for _, l := range splitLines(d.Text) {
			ops = append(ops, diffOp{op, l})
			switch op {
			case "insert":
				out.Added++
			case "delete":
				out.Removed++
			}
		}
	}
	out.Hunks = hunks(ops, &out.Truncated)
	out.Unified = unified(out.Hunks, labelA, labelB)
}

// splitLines splits text after each line break, dropping the breaks.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	parts := strings.SplitAfter(text, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	for i, p := range parts {
		parts[i] = strings.TrimSuffix(p, "\n")
	}
	return parts
}

// hunks groups the changed lines with their context; listing stops at
// diffMaxLines lines (truncated).
func hunks(ops []diffOp, truncated *bool) []DiffHunk {
	out := []DiffHunk{}
	listed := 0
	oldNo, newNo := make([]int, len(ops)), make([]int, len(ops)) // line numbers before each op
	o, n := 1, 1
	for i, op := range ops {
		oldNo[i], newNo[i] = o, n
		if op.op != "insert" {
			o++
		}
		if op.op != "delete" {
			n++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].op == "equal" {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i // one past the last op of the hunk
		for j := i; j < len(ops); j++ {
			if ops[j].op != "equal" {
				end = j + 1
				continue
			}
			if j-end >= 2*diffContext { // the gap to the next change is wider than both contexts
				break
			}
		}
		end = min(len(ops), end+diffContext)
		h := DiffHunk{OldStart: oldNo[start], NewStart: newNo[start]}
		for _, op := range ops[start:end] {
			if listed >= diffMaxLines {
				*truncated = true
				break
			}
			h.Lines = append(h.Lines, DiffLine{Op: op.op, Text: op.text})
			listed++
			if op.op != "insert" {
				h.OldLines++
			}
			if op.op != "delete" {
				h.NewLines++
			}
		}
		if h.OldLines == 0 {
			h.OldStart--
		}
		if h.NewLines == 0 {
			h.NewStart--
		}
		if len(h.Lines) > 0 {
			out = append(out, h)
		}
		if *truncated {
			break
		}
		i = end
	}
	return out
}

// unified renders hunks as a unified diff.
func unified(hs []DiffHunk, labelA, labelB string) string {
	if len(hs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", labelA, labelB)
	for _, h := range hs {
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
		for _, l := range h.Lines {
			mark := byte(' ')
			switch l.Op {
			case "insert":
				mark = '+'
			case "delete":
				mark = '-'
			}
			b.WriteByte(mark)
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
