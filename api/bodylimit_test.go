package api

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serveTCP serves h on a real loopback listener (App().Test buffers whole
// requests, so it cannot show what a server reads from a socket).
func serveTCP(t *testing.T, h *harness) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.s.App().Listener(ln) }()
	t.Cleanup(func() { _ = h.s.App().ShutdownWithTimeout(5 * time.Second) })
	return ln.Addr().String()
}

// rssBytes reads VmRSS or VmHWM of this process.
func rssBytes(t *testing.T, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err) // only where procfs is missing (not Linux)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("%s missing from /proc/self/status", field)
	return 0
}

// floodResult is what one endless request came to.
type floodResult struct {
	status int   // status of the answer (0: none could be read)
	sent   int64 // body bytes written before the server stopped taking them
	err    error
}

// flood sends head, then a chunked body of prefix and filler bytes up to
// total, generated as it goes; it stops once the server answers, closes the
// connection or ctx ends.
func flood(ctx context.Context, addr, head, prefix string, total int64) floodResult {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return floodResult{err: err}
	}
	defer conn.Close()
	answered := make(chan floodResult, 1)
	go func() {
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- floodResult{err: err}
			return
		}
		res.Body.Close()
		answered <- floodResult{status: res.StatusCode}
	}()
	if _, err := conn.Write([]byte(head)); err != nil {
		return floodResult{err: err}
	}
	filler := bytes.Repeat([]byte("a"), 64<<10)
	chunk := func(p []byte) []byte {
		return append(append([]byte(strconv.FormatInt(int64(len(p)), 16)+"\r\n"), p...), "\r\n"...)
	}
	var sent int64
	full := chunk(filler)
	first := full
	if prefix != "" { // an empty chunk would end the body
		first = chunk([]byte(prefix))
	}
	_ = conn.SetWriteDeadline(time.Now().Add(2 * time.Minute))
	for sent < total {
		select {
		case r := <-answered:
			r.sent = sent
			return r
		case <-ctx.Done():
			return floodResult{sent: sent, err: ctx.Err()}
		default:
		}
		p := full
		if sent == 0 {
			p = first
		}
		if _, err := conn.Write(p); err != nil {
			break // the server closed the connection: read its answer
		}
		sent += int64(len(p))
	}
	select {
	case r := <-answered:
		r.sent = sent
		return r
	case <-time.After(10 * time.Second):
		return floodResult{sent: sent, err: fmt.Errorf("no answer")}
	}
}

// TestEndlessBodiesAreRefusedWithinBoundedMemory is the High finding: four
// parallel 1 GB chunked bodies (a JSON route, a JSON route sent as
// multipart, an upload, a messenger webhook) are refused with 413 after a
// bounded read, and the process's peak RSS stays within a small bound. On the
// old code the JSON route read the whole body before its size check (the
// test stops the flood as soon as RSS passes the bound).
func TestEndlessBodiesAreRefusedWithinBoundedMemory(t *testing.T) {
	const limit = 1 << 20
	h := fileHarness(t, "sqlite", map[string]string{
		"LORE_BODY_LIMIT_BYTES": strconv.Itoa(limit), "LORE_UPLOAD_MAX_BYTES": strconv.Itoa(limit),
	})
	addr := serveTCP(t, h)
	chunked := func(path, ctype, token string) string {
		hd := "POST " + path + " HTTP/1.1\r\nHost: lore\r\nTransfer-Encoding: chunked\r\nContent-Type: " + ctype + "\r\n"
		if token != "" {
			hd += "Authorization: Bearer " + token + "\r\n"
		}
		return hd + "\r\n"
	}
	floods := []struct{ name, head, prefix string }{
		{"json", chunked(clientPath+"/chat/feedback", "application/json", ""), `{"message_id":"`},
		{"json as multipart", chunked(adminPath+"/users:login", "multipart/form-data; boundary=XX", ""),
			"--XX\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n"},
		{"upload", chunked(adminPath+"/files:upload", "multipart/form-data; boundary=XX", h.admin),
			"--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.txt\"\r\nContent-Type: text/plain\r\n\r\n"},
		{"webhook", chunked(clientPath+"/bot/wecom-app?site_id=1&msg_signature=x&timestamp=1&nonce=n", "text/xml", ""),
			"<xml><Encrypt>"},
	}

	const bound = 64 << 20
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM where allowed
	base := rssBytes(t, "VmRSS")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peak atomic.Int64
	peak.Store(base)
	done := make(chan struct{})
	go func() { // samples RSS; stops the flood once it passes the bound
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if r := rssBytes(t, "VmRSS"); r > peak.Load() {
				peak.Store(r)
				if r-base > bound {
					cancel()
				}
			}
		}
	}()
	results := make([]floodResult, len(floods))
	var wg sync.WaitGroup
	for i, f := range floods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = flood(ctx, addr, f.head, f.prefix, 1<<30)
		}()
	}
	wg.Wait()
	close(done)
	if hwm := rssBytes(t, "VmHWM"); hwm > peak.Load() && hwm-base < 1<<30 {
		peak.Store(hwm) // only meaningful when clear_refs reset it
	}
	growth := peak.Load() - base
	t.Logf("RSS: base %d MiB, peak %d MiB (+%d MiB)", base>>20, peak.Load()>>20, growth>>20)
	if growth > bound {
		t.Errorf("peak RSS grew by %d MiB (bound %d MiB)", growth>>20, bound>>20)
	}
	for i, r := range results {
		t.Logf("%s: status %d after %d KiB sent (%v)", floods[i].name, r.status, r.sent>>10, r.err)
		if r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: status %d, want 413 (err %v)", floods[i].name, r.status, r.err)
		}
		// What the client could write is the limit plus socket buffers.
		if r.sent > 64<<20 {
			t.Errorf("%s: the server took %d MiB before refusing", floods[i].name, r.sent>>20)
		}
	}
	if got := storedObjects(t, h); len(got) != 0 {
		t.Fatalf("refused upload stored %v", got)
	}
}

// TestBodyLimitsHoldForEveryEncoding: a declared length over the limit is
// refused before anything is read; a JSON document sent as multipart meets
// the JSON limit; a small gzip body that inflates past the limit is 413 and
// an unknown encoding 415; an upload counts its bytes on the wire.
func TestBodyLimitsHoldForEveryEncoding(t *testing.T) {
	h := fileHarness(t, "sqlite", map[string]string{"LORE_BODY_LIMIT_BYTES": "4096", "LORE_UPLOAD_MAX_BYTES": "8192"})
	addr := serveTCP(t, h)
	// Declared 1 GB, 16 KiB sent (fasthttp prefetches up to 8 KiB before
	// any handler): answered at once, the rest never awaited.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s/chat/feedback HTTP/1.1\r\nHost: lore\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", clientPath, 1<<30, strings.Repeat("a", 16<<10))
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != 413 {
		t.Fatalf("declared 1 GB: %v %v", res, err)
	}

	big := `{"email":"` + strings.Repeat("a", 12<<10) + `","password":"x"}`
	r := h.do("POST", adminPath+"/users:login", big, "", "Content-Type", "multipart/form-data; boundary=XX")
	if r.Status != 413 || r.Code != 413 {
		t.Fatalf("JSON as multipart: %d %s", r.Status, r.Raw)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"email":"` + strings.Repeat("a", 1<<20) + `","password":"x"}`))
	_ = zw.Close()
	if gz.Len() > 4096 {
		t.Fatalf("gzip body of %d bytes", gz.Len())
	}
	r = h.do("POST", adminPath+"/users:login", gz.Bytes(), "", "Content-Encoding", "gzip")
	if r.Status != 413 {
		t.Fatalf("gzip bomb: %d %s", r.Status, r.Raw)
	}
	r = h.do("POST", adminPath+"/users:login", `{}`, "", "Content-Encoding", "br")
	if r.Status != 415 || r.Code != 415 {
		t.Fatalf("unknown encoding: %d %s", r.Status, r.Raw)
	}
	// A gzip body within the limit still works.
	gz.Reset()
	zw = gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"email":"nobody@x.test","password":"wrong-password"}`))
	_ = zw.Close()
	r = h.do("POST", adminPath+"/users:login", gz.Bytes(), "", "Content-Encoding", "gzip")
	if r.Status != 400 || !strings.Contains(r.Msg, "Incorrect email or password") {
		t.Fatalf("small gzip body: %d %s", r.Status, r.Raw)
	}
	// An upload of 30 MiB with the limit at 8 KiB is refused on the wire:
	// past 8 KiB + the multipart allowance, not after parsing it whole.
	body, ctype := multipartBody(t, []upPart{{"file", "big.txt", bytes.Repeat([]byte("x"), 30<<20)}}, nil)
	r = h.do("POST", adminPath+"/files:upload", body, h.admin, "Content-Type", ctype)
	if r.Status != 413 {
		t.Fatalf("30 MiB upload: %d %s", r.Status, r.Raw)
	}
	r = h.do("POST", adminPath+"/files:upload", body, h.admin, "Content-Type", ctype, "Content-Encoding", "gzip")
	if r.Status != 413 && r.Status != 415 {
		t.Fatalf("compressed upload: %d %s", r.Status, r.Raw)
	}
	if got := storedObjects(t, h); len(got) != 0 {
		t.Fatalf("refused uploads stored %v", got)
	}
}

// TestEveryRouteRefusesOversizeBodies sends every route that takes a body
// (every method but GET and HEAD) a chunked body past its limit, once as
// JSON and once with a multipart Content-Type, over a real socket: each is
// 413 in the envelope and nothing changes.
func TestEveryRouteRefusesOversizeBodies(t *testing.T) {
	h := fileHarness(t, "sqlite", map[string]string{"LORE_BODY_LIMIT_BYTES": "16384", "LORE_UPLOAD_MAX_BYTES": "32768",
		"MESSENGER_MAX_BODY_BYTES": "4096"})
	addr := serveTCP(t, h)
	before := h.fingerprint()
	n := 0
	for _, r := range h.s.Routes() {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			continue
		}
		path := surfacePrefixes[r.Surface][0] + pathParam.ReplaceAllString(r.Path, "1")
		limit := h.s.bodyMax(r)
		ctypes := []string{"application/json", "multipart/form-data; boundary=XX"}
		prefix := "--XX\r\n"
		if r.Multipart { // a well-formed file part that never ends
			ctypes = ctypes[1:]
			prefix = "--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"
		}
		for _, ctype := range ctypes {
			head := "POST " + path + " HTTP/1.1\r\nHost: lore\r\nTransfer-Encoding: chunked\r\nContent-Type: " + ctype +
				"\r\nAuthorization: Bearer " + h.admin + "\r\n\r\n"
			head = r.Method + strings.TrimPrefix(head, "POST")
			res := flood(context.Background(), addr, head, prefix, 4*limit+256<<10)
			// A multipart route of a resource that does not exist (id 1)
			// answers 404 before it reads the form: refused unread as well.
			missing := r.Multipart && strings.Contains(r.Path, "{") && res.status == http.StatusNotFound
			if res.status != http.StatusRequestEntityTooLarge && !missing {
				t.Errorf("%s %s (%s): status %d after %d bytes (%v)", r.Method, path, ctype, res.status, res.sent, res.err)
			}
			n++
		}
	}
	if n < 40 {
		t.Fatalf("only %d requests: routes missing?", n)
	}
	if now := h.fingerprint(); now != before {
		t.Fatalf("oversize bodies changed the database:\nbefore %s\nafter  %s", before, now)
	}
}
