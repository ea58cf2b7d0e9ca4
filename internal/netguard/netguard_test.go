package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	p, err := New([]string{"ollama.internal", "10.1.0.0/16", "127.0.0.1:11434"})
	if err != nil {
		t.Fatal(err)
	}
	refused := []string{
		"http://169.254.169.254/latest/meta-data", "http://metadata.google.internal/computeMetadata/v1",
		"http://0.0.0.0:8080", "http://[::]:80", "http://localhost:5432", "http://127.0.0.1:5432/v1",
		"http://user:pass@llm.example.com/v1", "http://10.2.0.1/v1", "http://192.168.1.1/v1", "http://[::1]/v1",
		"http://[fe80::1]/v1", "ftp://llm.example.com", "http://[::ffff:169.254.169.254]/", "http://app.localhost/v1",
	}
	for _, u := range refused {
		if err := p.CheckURL(u); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	for _, u := range []string{"https://api.openai.com/v1", "http://ollama.internal:11434/v1", "http://10.1.2.3/v1",
		"http://127.0.0.1:11434/v1"} {
		if err := p.CheckURL(u); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
	// Link-local is refused even when listed.
	p2, _ := New([]string{"169.254.169.254", "metadata.google.internal"})
	if err := p2.CheckURL("http://169.254.169.254/"); !errors.Is(err, ErrRefused) {
		t.Errorf("allow-listed metadata address: %v", err)
	}
	if _, err := New([]string{"user@host"}); err == nil {
		t.Error("bad entry accepted")
	}
}

// fakeResolver answers every name with the addresses it holds.
type fakeResolver []netip.Addr

func (f fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f, nil
}

// TestDialChecksTheResolvedAddress: a public-looking name that resolves to
// a loopback or metadata address is refused at connect time (DNS
// rebinding); allowed internal hosts connect.
func TestDialChecksTheResolvedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	old := resolver
	defer func() { resolver = old }()
	resolver = fakeResolver{netip.MustParseAddr("127.0.0.1")}

	open, _ := New(nil)
	if _, err := open.Client().Get("http://rebind.example.com:" + port + "/"); !errors.Is(err, ErrRefused) {
		t.Fatalf("name resolving to loopback: %v", err)
	}
	if _, err := open.Client().Get(srv.URL); !errors.Is(err, ErrRefused) {
		t.Fatalf("literal loopback: %v", err)
	}
	resolver = fakeResolver{netip.MustParseAddr("169.254.169.254")}
	all, _ := New([]string{"rebind.example.com", "169.254.0.0/16"})
	if _, err := all.Client().Get("http://rebind.example.com:" + port + "/"); !errors.Is(err, ErrRefused) {
		t.Fatalf("name resolving to metadata: %v", err)
	}
	resolver = fakeResolver{netip.MustParseAddr("127.0.0.1")}
	byName, _ := New([]string{"rebind.example.com"})
	res, err := byName.Client().Get("http://rebind.example.com:" + port + "/")
	if err != nil {
		t.Fatalf("allowed name: %v", err)
	}
	res.Body.Close()
	byPort, _ := New(nil)
	byPort.AllowURLHost(srv.URL + "/v1")
	res, err = byPort.Client().Get(srv.URL)
	if err != nil {
		t.Fatalf("operator endpoint: %v", err)
	}
	res.Body.Close()
	// Only that port of the operator's host.
	if err := byPort.CheckURL("http://127.0.0.1:5432/"); err == nil {
		t.Fatal("another port of the operator's endpoint host accepted")
	}
}

func TestRedactURL(t *testing.T) {
	got := RedactURL("http://bob:s3cret@llm.example.com/v1")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "llm.example.com") {
		t.Fatalf("redacted: %s", got)
	}
	if RedactURL("https://llm.example.com/v1") != "https://llm.example.com/v1" {
		t.Fatal("changed a URL without credentials")
	}
}

// Many calls at once to one model host reuse their connections: a second
// wave of 30 concurrent requests opens none (net/http's default keeps 2).
func TestClientKeepsConnectionsOfConcurrentCalls(t *testing.T) {
	var mu sync.Mutex
	opened := 0
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			opened++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	p, _ := New(nil)
	p.AllowURLHost(srv.URL)
	c := p.Client()
	wave := func() {
		var wg sync.WaitGroup
		for range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}()
		}
		time.Sleep(200 * time.Millisecond) // all 30 in flight at once
		for range 30 {
			release <- struct{}{}
		}
		wg.Wait()
	}
	wave()
	mu.Lock()
	first := opened
	mu.Unlock()
	wave()
	mu.Lock()
	defer mu.Unlock()
	if first != 30 || opened != first {
		t.Fatalf("connections opened: %d by the first wave (want 30), %d more by the second (want 0)", first, opened-first)
	}
}
