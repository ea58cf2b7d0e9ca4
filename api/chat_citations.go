package api

import (
	"bytes"
	"context"
	"encoding/json"
)

// markChangedSources adds to each stored source of the messages whether its
// document changed since the answer quoted it: changed_since compares the
// revision the source names with the document's current one
// (current_revision, null when the document is gone, which counts as a
// change). A source stored without a revision (answers from before
// revisions were recorded) gets changed_since null. One query for the
// whole thread.
func (s *Server) markChangedSources(ctx context.Context, msgs []ChatMessageOutput) error {
	type parsed struct {
		msg     int
		sources []map[string]any
	}
	var all []parsed
	var ids []int64
	for i, m := range msgs {
		if len(m.Sources) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(m.Sources))
		dec.UseNumber() // ids and scores come back as stored
		var list []map[string]any
		if dec.Decode(&list) != nil || len(list) == 0 {
			continue
		}
		for _, src := range list {
			if id, ok := sourceInt(src["documentId"]); ok {
				ids = append(ids, id)
			}
		}
		all = append(all, parsed{msg: i, sources: list})
	}
	if len(all) == 0 {
		return nil
	}
	current, err := s.d.DB.CurrentVersions(ctx, dedupe(ids))
	if err != nil {
		return err
	}
	for _, p := range all {
		for _, src := range p.sources {
			id, _ := sourceInt(src["documentId"])
			cur, exists := current[id]
			src["current_revision"] = nil
			if exists {
				src["current_revision"] = cur
			}
			rev, known := sourceInt(src["revision"])
			switch {
			case !exists:
				src["changed_since"] = true
			case !known:
				src["changed_since"] = nil
			default:
				src["changed_since"] = rev != cur
			}
		}
		b, err := json.Marshal(p.sources)
		if err != nil {
			return err
		}
		msgs[p.msg].Sources = b
	}
	return nil
}

// sourceInt reads an integer field of a decoded source.
func sourceInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil && i > 0
}
