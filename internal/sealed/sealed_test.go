package sealed

import (
	"errors"
	"strings"
	"testing"
)

const keyA = "0123456789abcdef0123456789abcdef-A"
const keyB = "0123456789abcdef0123456789abcdef-B"

func box(t *testing.T, k string) *Box {
	t.Helper()
	b, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSealOpen: a sealed value carries the marker, not the clear text, is
// different each time (random nonce), opens with its key and with no other;
// a changed byte or a truncated value is refused, clear values pass through.
func TestSealOpen(t *testing.T) {
	a, b := box(t, keyA), box(t, keyB)
	s1, s2 := a.Seal("sk-live-secret"), a.Seal("sk-live-secret")
	if !strings.HasPrefix(s1, Prefix) || strings.Contains(s1, "sk-live") || s1 == s2 {
		t.Fatalf("sealed: %q %q", s1, s2)
	}
	if got, err := a.Open(s1); err != nil || got != "sk-live-secret" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := b.Open(s1); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("other key: %v", err)
	}
	tampered := []byte(s1)
	tampered[len(tampered)-2] ^= 1
	for _, bad := range []string{string(tampered), s1[:len(Prefix)+5], Prefix + "!!!"} {
		if _, err := a.Open(bad); !errors.Is(err, ErrWrongKey) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	if got, err := a.Open("plain"); err != nil || got != "plain" {
		t.Fatalf("clear: %q %v", got, err)
	}
	if a.Seal("") != "" || a.Seal(s1) != s1 {
		t.Fatal("empty or sealed values must stay as they are")
	}
	var none *Box
	if none.Seal("x") != "x" {
		t.Fatal("nil box seals")
	}
	if _, err := none.Open(s1); err == nil {
		t.Fatal("nil box opened a sealed value")
	}
	if _, err := New("short"); err == nil {
		t.Fatal("short key accepted")
	}
}

// TestSealJSON: only strings under secret names are sealed, at any depth
// and in arrays; other values (numbers exactly) are kept; OpenJSON gives the
// document back; a wrong key is an error; HasClearSecrets tells rows to
// rewrite.
func TestSealJSON(t *testing.T) {
	a := box(t, keyA)
	doc := `{"chat":{"provider":"openai","api_key":"sk-chat-123456","base_url":"https://x","max_tokens":12345678901234567890},` +
		`"processors":[{"name":"docling","api_key":"pk-proc-abcdef"}],"wecom":{"token":"tok-1","corp_secret":"cs-2","agent_id":"1000002"},"empty_key":""}`
	if !HasClearSecrets(doc) {
		t.Fatal("clear secrets not seen")
	}
	sealedDoc := a.SealJSON(doc)
	for _, clear := range []string{"sk-chat-123456", "pk-proc-abcdef", "tok-1", "cs-2"} {
		if strings.Contains(sealedDoc, clear) {
			t.Fatalf("%s in clear: %s", clear, sealedDoc)
		}
	}
	for _, kept := range []string{`"base_url":"https://x"`, `"max_tokens":12345678901234567890`, `"agent_id":"1000002"`, `"empty_key":""`, `"provider":"openai"`} {
		if !strings.Contains(sealedDoc, kept) {
			t.Fatalf("%s lost: %s", kept, sealedDoc)
		}
	}
	if HasClearSecrets(sealedDoc) {
		t.Fatal("sealed document still has clear secrets")
	}
	opened, err := a.OpenJSON(sealedDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{`"api_key":"sk-chat-123456"`, `"api_key":"pk-proc-abcdef"`, `"token":"tok-1"`, `"corp_secret":"cs-2"`} {
		if !strings.Contains(opened, clear) {
			t.Fatalf("%s not restored: %s", clear, opened)
		}
	}
	if _, err := box(t, keyB).OpenJSON(sealedDoc); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	if a.SealJSON(`{"name":"x"}`) != `{"name":"x"}` || a.SealJSON("not json") != "not json" {
		t.Fatal("documents without secrets must stay byte for byte")
	}
	if again := a.SealJSON(sealedDoc); again != sealedDoc {
		t.Fatal("sealing twice changed the document")
	}
}
