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

// rankingNotes is the report's section on what the first-ranked file loses
// to and what was measured against it.
func rankingNotes(w func(string, ...any)) {
	w("")
	w("## Notes: what the first-ranked file loses to, and what was tried")
	w("")
	w("Top-1 misses at commit 38ffdf3 (English 15 of 65, Chinese 9 of 25). English: in 8 the winner is a long page with many candidate chunks, which the document blend favours (fs.md 3, cli.md 2, test.md 2, vm.md 1); in the others a page that uses the question's words in another sense (modules.md 2, net.md, http.md, assert.md, packages.md, perf_hooks.md); in nearly all the answering section names the answer with an API identifier the question does not use (setInterval, process.argv, process.env, fs.readdir, fs.mkdir, path.basename, util.inspect, os.tmpdir, os.freemem). Chinese: in 7 the short NAME chunk of a neighbouring page won (rmdir for rm, users for who, link for ln, grant for chmod, zipinfo for ls, pg_dump for tar, dirname for tail).")
	w("")
	w("Measured with `loreeval -keep`, then `loreeval -offline DIR` (this build's pipeline and extractive responder in-process over the kept store with lore serve's defaults; it reproduced the HTTP run's figures exactly). Kept: BM25 k1 0.9 in the lexical reranker (English hit@1 50/65 and MRR@10 0.838 against 49/65 and 0.828 at 1.2; Chinese unchanged at 16/25, 0.724; 0.7 gave the same as 0.9, 1.6 English 49, Chinese 15) and relevance over the chunk's section among the recall pool (cited passages from a relevant file 61/87 against 59/86 chunk by chunk, false abstention 3/90 against 4/90; over the whole page's pool chunks, 62/88 but one Chinese off-topic question answered).")
	w("")
	w("Rejected, against k1 1.2 (English hit@1 49, Chinese 16): the document blend from each document's best 1, 2 or 3 chunks only (English 40, 41, 43) or with weights 1/rank, 1/sqrt(rank), 1/rank² (47, 48, 42); DocumentBlend 0.35, 0.7, 1.0, 1.5 instead of 0.5 (English 47, 47, 44, 40); FusionBlend 0.7, 1.4 (English 49, 49; Chinese 15 at 1.4); an added term for the share of the question's idf the chunk covers, weight 0.25, 0.5, 1 (English 49, 49, 47); BM25 b 0.3, 0.5, 0.9 (Chinese 12, 13, 16; English 49, 50, 49); proximity weight 0 or 0.6 (English 48 or 50, Chinese 15 both), phrase bonus 1.5 (English 50); query words matched by abbreviated identifiers in the section heading (freemem as free memory, tmpdir as temporary directory, env as environment), weight 1 to 6 (English 49 throughout: those chunks hold the words in their text already and lose on the blend). Against k1 0.9 (English 50, Chinese 16): the document blend divided by the document's chunk count to the power 0.25 or 0.5 (English 50 and 45, Chinese 14 and 11), from each section's best chunk (English 46, Chinese 14), or from chunks within half of the best (English 49, Chinese 14); a shortest-window proximity term, weight 0.5, 1, 2, 4 (English 50, 50, 48, 47); a floor of 0.5, 0.75, 1 times the mean length under the length normalisation (Chinese 15, 12, 12: the short NAME chunks that lose here also win most Chinese hits); recall pools of 30, 80, 100 chunks instead of 50 (English 49, 48, 48; Chinese 12 at 30); pseudo-relevance feedback off, from 5 passages, or with 40 terms (English 48, 49, 50). What remains is mostly vocabulary the question and the answering section do not share, which lexical ranking cannot bridge.")
}

func frac(a, b int) string { return fmt.Sprintf("%d/%d = %.3f", a, b, ratio(a, b)) }
