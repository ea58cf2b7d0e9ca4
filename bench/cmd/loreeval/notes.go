package main

import "fmt"

// responderNotes is the report's section on what bounds the cited-passage
// figure and how the extractive responder's choice was calibrated.
func (r *report) responderNotes(w func(string, ...any)) {
	w("")
	w("## Notes: what bounds cited passages, and the responder's calibration")
	w("")
	w("The extractive responder cites one passage per answer (the one it quotes), so the share of cited passages from a relevant file is the share of answers whose chosen passage is the relevant file's. It can only be as good as the passages the chat's search hands it:")
	w("")
	w("| Corpus | relevant file among the passages the answer saw | relevant file first among them |")
	w("| --- | ---: | ---: |")
	for _, a := range r.answers {
		w("| %s | %s | %s |", a.lang, frac(a.seen, a.answerable), frac(a.first, a.answerable))
	}
	w("")
	w("Calibration (internal/llm/extractive, `loreeval -dump` then `loreeval -replay`, which answers the dumped questions again over the passages they saw): the responder answers from the first passage, in the search's order, whose relevance reaches 0.5 (AbstainBelow), and says the docs do not cover the question when none does. On the run of commit 47f5ca4 the off-topic questions' best relevance was at most 0.47 (\"capital\" matching \"capitalization\"; 法国 in a character-set page; 0.36 for the other thirteen) and the answerable ones fell below 0.5 four times (0.44, 0.42, 0.42, 0.33). Re-choosing the passage by lexical support instead of the search's order (weighted sums of relevance, the best sentence's and the title's share of the question's terms, the passage's coverage and a rank penalty; 19,208 weightings), measured on the dumps of two runs with the current responder: on 47f5ca4's retrieval it reached at most 58/86 cited passages from a relevant file in-sample against 54/86 for the search's order, and 52/86 under leave-one-out; on 506b091's retrieval 59/86 in-sample, 58/86 leave-one-out, against 57/86. Always answering from the first passage once any reaches 0.5 gave 53/86 and 59/86. None of these gains holds on both runs, so the search's order stands and the cited-passage figure moves with retrieval (the table above).")
}

func frac(a, b int) string { return fmt.Sprintf("%d/%d = %.3f", a, b, ratio(a, b)) }
