package learned

import "strings"

// Identifiers in docs run words together ("freemem", "tmpdir",
// "arraybuffer", "autoincrement"); the model has seen the words but not the
// compound. A term the model does not know is read as the fewest known words
// it is made of, so a page about os.freemem() meets a question about free
// memory. Only the vectors change: the keyword index keeps the term whole.

// TextRevision names how a text becomes word vectors (compound terms read
// as their words since 2); stored vectors of another revision are not
// comparable, so it is part of the hybrid's model name and the index format.
const TextRevision = 2

const (
	minPiece      = 3  // shorter pieces match too much ("is", "on")
	maxPieces     = 4  // beyond that a split is more likely chance than words
	maxCompoundLn = 48 // longer terms are hashes, data or several identifiers
)

// compound returns the indexes of the known words term is made of, fewest
// pieces first and, among those, the split whose shortest piece is longest;
// nil when term is known, too short or long, not a lower-case ASCII
// identifier, or no split into known words exists.
func (m *Model) compound(term string) []int32 {
	m.splitMu.RLock()
	pieces, ok := m.splits[term]
	m.splitMu.RUnlock()
	if ok {
		return pieces
	}
	pieces = m.split(term)
	m.splitMu.Lock()
	if len(m.splits) >= maxSplitCache {
		clear(m.splits) // a crude bound; a site's identifiers refill it
	}
	if m.splits == nil {
		m.splits = make(map[string][]int32)
	}
	m.splits[strings.Clone(term)] = pieces
	m.splitMu.Unlock()
	return pieces
}

// maxSplitCache bounds the remembered splits: the unknown terms of a
// documentation site number in the thousands, and each recurs often.
const maxSplitCache = 1 << 16

func (m *Model) split(term string) []int32 {
	n := len(term)
	if n < 2*minPiece || n > maxCompoundLn {
		return nil
	}
	for i := 0; i < n; i++ {
		if c := term[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return nil
		}
	}
	// best[i]: the split of term[:i] (pieces, shortest piece, last cut).
	type cut struct{ pieces, shortest, from int }
	var best [maxCompoundLn + 1]cut
	for i := 1; i <= n; i++ {
		best[i] = cut{pieces: -1}
		for j := 0; j <= i-minPiece; j++ {
			if j > 0 && best[j].pieces < 0 {
				continue // term[:j] has no split
			}
			if _, ok := m.index[term[j:i]]; !ok {
				continue
			}
			p, s := 1, i-j
			if j > 0 {
				p, s = best[j].pieces+1, min(best[j].shortest, i-j)
			}
			if p > maxPieces {
				continue
			}
			if b := best[i]; b.pieces < 0 || p < b.pieces || p == b.pieces && s > b.shortest {
				best[i] = cut{pieces: p, shortest: s, from: j}
			}
		}
	}
	if best[n].pieces < 2 {
		return nil // no split, or the whole term (known terms never get here)
	}
	out := make([]int32, best[n].pieces)
	for i, k := n, len(out)-1; i > 0; i, k = best[i].from, k-1 {
		out[k] = m.index[term[best[i].from:i]]
	}
	return out
}
