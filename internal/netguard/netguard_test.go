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

// zonedURLs are internal or metadata addresses with an IPv6 zone, each
// refused without it.
var zonedURLs = []string{
	"http://[::1%25lo]:6379/", "http://[fd00:ec2::254%25eth0]/latest/meta-data",
	"http://[fe80::a9fe:a9fe%25eth0]/", "http://[fc00::1%251]/v1",
}

// TestZonedAddressesAreRefusedAtSave: a zone does not take an address out
// of the ranges it belongs to.
func TestZonedAddressesAreRefusedAtSave(t *testing.T) {
	p, _ := New(nil)
	for _, raw := range zonedURLs {
		if err := p.CheckURL(raw); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v (want refused)", raw, err)
		}
		unzoned := raw[:strings.Index(raw, "%")] + raw[strings.Index(raw, "]"):]
		if err := p.CheckURL(unzoned); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v (want refused)", unzoned, err)
		}
	}
}

// TestZonedAddressesAreRefusedAtDial: the connect-time check refuses them
// too, whether the address is literal or what a name resolves to.
func TestZonedAddressesAreRefusedAtDial(t *testing.T) {
	p, _ := New(nil)
	old := resolver
	defer func() { resolver = old }()
	// A dial that gets past the check would wait for its connect timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client := p.Client()
	client.Timeout = 5 * time.Second
	for _, raw := range zonedURLs {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DialContext(ctx, "tcp", hostPort(u)); !errors.Is(err, ErrRefused) {
			t.Errorf("dial %s: %v (want refused)", hostPort(u), err)
		}
		if _, err := client.Get(raw); !errors.Is(err, ErrRefused) {
			t.Errorf("GET %s: %v (want refused)", raw, err)
		}
		resolver = fakeResolver{netip.MustParseAddr(u.Hostname())}
		if _, err := p.DialContext(ctx, "tcp", "rebind.example.com:80"); !errors.Is(err, ErrRefused) {
			t.Errorf("name resolving to %s: %v (want refused)", u.Hostname(), err)
		}
	}
}

// An allowed internal address still connects when written with a zone.
func TestAllowedZonedAddressConnects(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := New([]string{"::1"})
	raw := "http://[::1%25lo]:" + port + "/"
	if err := p.CheckURL(raw); err != nil {
		t.Fatalf("allowed %s: %v", raw, err)
	}
	res, err := p.Client().Get(raw)
	if err != nil {
		t.Fatalf("allowed %s: %v", raw, err)
	}
	res.Body.Close()
}
