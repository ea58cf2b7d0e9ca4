package local

// prepared is the work on one chunk that depends only on the chunk: its
// keyword terms and the int8 code of its vector. Upsert does it before it
// takes the store's locks, in the caller's goroutine, so concurrent writers
// analyse their batches in parallel and the serialised part of a write (log
// append, then applying it in memory, during which searches wait) holds
// only the index updates. Recovery, which has no callers to share the work
// with, prepares each chunk as it applies it.
type prepared struct {
	tf    map[string]uint32 // keyword term frequencies (termFreqs)
	terms int               // weighted term count
	code  []int8            // the normalised vector quantised (ivfcode.go)
	scale float32
	near  *ivfList // the list nearest to the vector, if its site is indexed
}

// prepare does the chunk's preparation; vec is its normalised vector.
func prepare(title, heading, text string, vec []float32) *prepared {
	p := &prepared{}
	p.tf, p.terms = termFreqs(title, heading, text)
	p.code, p.scale = quantize(make([]int8, 0, len(vec)), vec)
	return p
}
