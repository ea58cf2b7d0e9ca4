package redact

import (
	"errors"
	"strings"
	"testing"
)

func TestTextMasksSecrets(t *testing.T) {
	in := `POST "https://ops:hunter2-pass@llm.internal.example/v1/chat/completions": 401 Unauthorized ` +
		`{"error":{"message":"Incorrect API key provided: sk-live-7Hq2Xv9Lm4Pz8Rt6Wy3Nb5Kc. Authorization: Bearer abcdEFGH12345678zz","code":"invalid_api_key"}} ` +
		`retry at https://api.example.com/v1/models?api_key=AKIA1234567890ABCD&x=1 (model gpt-4o-mini, request req_0123456789)`
	out := Text(in)
	for _, leak := range []string{"hunter2", "ops:", "7Hq2Xv9Lm4Pz8Rt6Wy3Nb5Kc", "EFGH12345678", "1234567890ABCD"} {
		if strings.Contains(out, leak) {
			t.Errorf("%q survives: %s", leak, out)
		}
	}
	for _, kept := range []string{"llm.internal.example/v1/chat/completions", "401 Unauthorized", "invalid_api_key", "gpt-4o-mini",
		"https://****@llm", "sk-l****", "api.example.com/v1/models"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q lost: %s", kept, out)
		}
	}
}

func TestFailureShowsOnlyItsNotice(t *testing.T) {
	perm := errors.New("permanent")
	f := NewFailure("The model service failed", perm)
	if !strings.HasPrefix(f.Error(), "The model service failed (error id e-") || len(f.ID) != 14 {
		t.Fatalf("%q %q", f.Error(), f.ID)
	}
	if !errors.Is(f, perm) || errors.Is(NewFailure("x", nil), perm) {
		t.Fatal("permanent mark")
	}
	//lint:ignore SA4000 two calls, two ids
	if NewID() == NewID() {
		t.Fatal("ids repeat")
	}
}

// FuzzText: whatever surrounds them, a provider key and a URL password never
// survive Text, and Text never panics.
func FuzzText(f *testing.F) {
	f.Add("Incorrect API key provided: ", " see https://")
	f.Add(`{"error":"`, `"}`)
	f.Add("", "")
	f.Fuzz(func(t *testing.T, before, after string) {
		const key = "sk-proj-9fQ2x7LmA4pZ8rT6wY3nB5kC"
		out := Text(before + " " + key + " https://u:s3cretPassw0rd@h.example/x " + after)
		if strings.Contains(out, key[8:]) || strings.Contains(out, "s3cretPassw0rd") {
			t.Fatalf("survives: %q", out)
		}
	})
}
