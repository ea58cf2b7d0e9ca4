package api

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/sealed"
)

// maskMarker is the part of a masked value that marks it as such.
const maskMarker = "****"

// isSecretKey reports whether values under this key name are masked: the
// names whose values are also encrypted at rest (sealed.SecretName: key,
// token, secret, password, app_id, client_id).
func isSecretKey(name string) bool { return sealed.SecretName(name) }

// maskSecret masks one secret value; an empty value stays empty so readers
// can tell "not set" from "set".
func maskSecret(v string) string {
	if v == "" {
		return ""
	}
	if utf8.RuneCountInString(v) <= 6 {
		return maskMarker
	}
	r := []rune(v)
	return string(r[:3]) + maskMarker + string(r[len(r)-3:])
}

// maskTree returns a copy of a decoded JSON value with every string under a
// secret key name masked, at any depth.
func maskTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if s, ok := val.(string); ok && isSecretKey(k) {
				out[k] = maskSecret(s)
				continue
			}
			out[k] = maskTree(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = maskTree(t[i])
		}
		return out
	}
	return v
}

// restoreSecrets completes a section sent by a client from the stored one:
// secret keys the client omitted are copied from old, and secret values that
// still contain the mask are replaced by the stored value. A masked value with
// nothing stored behind it is a 422 naming the field.
func restoreSecrets(path string, in, old map[string]any) error {
	for k, ov := range old {
		if _, present := in[k]; !present && isSecretKey(k) {
			in[k] = ov
		}
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := in[k].(type) {
		case string:
			if !isSecretKey(k) || !strings.Contains(v, maskMarker) {
				continue
			}
			stored, _ := old[k].(string)
			if stored == "" {
				return Invalid("%s%s: masked value given but no secret is stored; send the full value", path, k)
			}
			in[k] = stored
		case map[string]any:
			sub, _ := old[k].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
			}
			if err := restoreSecrets(path+k+".", v, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// toJSONMap converts a value to its decoded JSON object form.
func toJSONMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = decodeNumbers(b, &m)
	return m
}

// decodeNumbers decodes JSON keeping numbers exact (json.Number).
func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// mergeSection applies a section sent by a client over the stored section
// old (restoring secrets) and decodes the result into dst.
func mergeSection(name string, raw json.RawMessage, old, dst any) error {
	in := map[string]any{}
	if err := decodeNumbers(raw, &in); err != nil {
		return Invalid("%s: must be an object", name)
	}
	if err := restoreSecrets(name+".", in, toJSONMap(old)); err != nil {
		return err
	}
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return Invalid("%s: %v", name, err)
	}
	return nil
}

// cfgHas reports whether a top-level body key was sent with a non-null value.
func cfgHas(raw map[string]json.RawMessage, key string) bool {
	v, ok := raw[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// ---- shapes ---------------------------------------------------------------
