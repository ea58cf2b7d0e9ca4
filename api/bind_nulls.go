package api

import (
	"bytes"
	"encoding/json"
)

// jsonNulls returns the top-level keys of a JSON object body whose value is
// an explicit null. Update bodies decode into pointers, which cannot tell an
// absent field (keep) from a null one; the reference's front-ends send null
// to clear a field (an icon, a cover image, every quick question), so
// handlers clear the keys listed here.
func jsonNulls(body []byte) map[string]bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	out := map[string]bool{}
	for k, v := range top {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			out[k] = true
		}
	}
	return out
}
