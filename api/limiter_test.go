package api

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backends runs fn with the limiter state in memory and in Redis.
func backends(t *testing.T, env map[string]string, fn func(t *testing.T, h *harness)) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range env {
				vars[k] = v
			}
			if backend == "redis" {
				vars["REDIS_URL"] = "redis://127.0.0.1:6379/0"
			}
			fn(t, newHarness(t, "sqlite", vars))
		})
	}
}

// parallel sends n requests at once and counts the answers by status.
func parallel(n int, send func() *resp) map[int]int {
	counts := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := send()
			mu.Lock()
			counts[r.Status]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return counts
}

// TestSitePasswordGuessesAreReservedBeforeBcrypt: 150 parallel wrong guesses
// get 5 evaluations (401) and 145 refusals (429); the count is in the cache
// backend, so a second API process on the same Redis sees it.
func TestSitePasswordGuessesAreReservedBeforeBcrypt(t *testing.T) {
	backends(t, map[string]string{"LORE_SITE_PASSWORD_MAX_FAILURES": "5"}, func(t *testing.T, h *harness) {
		st := saSite(h, "guarded")
		h.must(200, "PUT", adminPath+"/sites/"+itoa(st.ID)+"/password", map[string]string{"password": "right-pw"}, h.admin)
		counts := parallel(150, func() *resp {
			return h.do("POST", clientPath+"/client/sites/guarded/verify-password", map[string]string{"password": "wrong"}, "")
		})
		if counts[401] != 5 || counts[429] != 145 {
			t.Fatalf("150 parallel guesses: %v (want 5 × 401, 145 × 429)", counts)
		}
		other := New(h.d) // another API process on the same cache backend
		r := doOn(t, other, "POST", clientPath+"/client/sites/guarded/verify-password", `{"password":"right-pw"}`)
		if r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("second process: %d", r.StatusCode)
		}
	})
}

// doOn sends a JSON request to another server built on the same deps.
func doOn(t *testing.T, s *Server, method, path, body string) *http.Response {
	t.Helper()
	h := &harness{t: t, s: s}
	r := h.do(method, path, body, "")
	return &http.Response{StatusCode: r.Status, Header: r.Header}
}

// TestAdminLoginBruteForce: 30 parallel wrong passwords for one account
// from one address get at most LORE_LOGIN_MAX_FAILURES evaluations, then
// the right password is refused too from that address while the lock
// lasts (not from another); a second lock-out lasts twice as long; one IP
// guessing at many accounts meets the per-IP limit. The window is 6 s so a
// loaded machine cannot outlast a lock between two requests.
func TestAdminLoginBruteForce(t *testing.T) {
	backends(t, map[string]string{"LORE_LOGIN_MAX_FAILURES": "5", "LORE_LOGIN_IP_MAX_FAILURES": "40", "LORE_LOGIN_WINDOW": "6s"},
		func(t *testing.T, h *harness) {
			h.userToken("editor") // password123
			email := "editor" + strconv.Itoa(h.users) + "@example.com"
			login := func(email, pw string, ip string) *resp {
				return h.do("POST", adminPath+"/users:login", map[string]string{"email": email, "password": pw}, "", "X-Forwarded-For", ip)
			}
			counts := parallel(30, func() *resp { return login(email, "wrong-password", "10.0.0.1") })
			if counts[400] != 5 || counts[429] != 25 {
				t.Fatalf("30 parallel wrong passwords: %v (want 5 × 400, 25 × 429)", counts)
			}
			r := login(strings.ToUpper(email), "password123", "10.0.0.1")
			if r.Status != 429 || r.Code != 429 {
				t.Fatalf("right password during the lock: %d %s", r.Status, r.Raw)
			}
			h.must(200, "POST", adminPath+"/users:login", map[string]string{"email": email, "password": "password123"}, "",
				"X-Forwarded-For", "10.0.0.2")
			first, _ := strconv.Atoi(r.Header.Get("Retry-After"))
			time.Sleep(time.Duration(first) * time.Second)
			// The lock is over: one success resets the count of the account
			// from that address.
			h.must(200, "POST", adminPath+"/users:login", map[string]string{"email": email, "password": "password123"}, "",
				"X-Forwarded-For", "10.0.0.1")
			// A second lock-out that day lasts two windows (backoff): the
			// guesses are sent at once so the window cannot pass between them.
			var second int
			var mu sync.Mutex
			counts = parallel(6, func() *resp {
				r := login(email, "wrong-password", "10.0.0.1")
				if r.Status == 429 {
					mu.Lock()
					second, _ = strconv.Atoi(r.Header.Get("Retry-After"))
					mu.Unlock()
				}
				return r
			})
			if counts[400] != 5 || counts[429] != 1 || second < 7 {
				t.Fatalf("second lock-out: %v, Retry-After %d (want 2 windows of 6s)", counts, second)
			}
			// Per IP: guesses spread over accounts.
			var next atomic.Int64
			counts = parallel(50, func() *resp {
				return login("nobody"+strconv.FormatInt(next.Add(1), 10)+"@example.com", "x-password", "10.0.0.9")
			})
			if counts[400] != 40 || counts[429] != 10 {
				t.Fatalf("one IP guessing at 50 accounts: %v, want 40 × 400, 10 × 429", counts)
			}
		})
}

// TestTemporaryPasswordsExpireUnlessUsed: an invite's or a reset's
// password works for every route once used (the reference admin app has no
// forced change) and stays the user's until changed; one left unused past
// LORE_TEMP_PASSWORD_TTL no longer logs in.
func TestTemporaryPasswordsExpireUnlessUsed(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var inv UserWithPassword
	h.must(201, "POST", adminPath+"/users:invite", map[string]any{"email": "temp@example.com", "role": "admin"}, h.admin).into(t, &inv)
	var lr LoginResult
	h.must(200, "POST", adminPath+"/users:login", map[string]string{"email": "temp@example.com", "password": inv.Password}, "").into(t, &lr)
	h.must(200, "GET", adminPath+"/sites", nil, lr.Token)
	h.must(200, "PUT", adminPath+"/users/"+itoa(inv.User.ID)+"/password",
		map[string]string{"old_password": inv.Password, "new_password": "my-own-password"}, lr.Token)
	h.must(200, "POST", adminPath+"/users:login", map[string]string{"email": "temp@example.com", "password": "my-own-password"}, "").into(t, &lr)
	h.must(200, "GET", adminPath+"/sites", nil, lr.Token)

	h2 := newHarness(t, "sqlite", map[string]string{"LORE_TEMP_PASSWORD_TTL": "1ms"})
	h2.must(201, "POST", adminPath+"/users:invite", map[string]any{"email": "late@example.com"}, h2.admin).into(t, &inv)
	time.Sleep(10 * time.Millisecond)
	r := h2.must(400, "POST", adminPath+"/users:login", map[string]string{"email": "late@example.com", "password": inv.Password}, "")
	if r.Msg == "" || r.Msg == "Incorrect email or password" {
		t.Fatalf("expired temporary password: %s", r.Raw)
	}
	var rp UserWithPassword
	h.must(200, "POST", adminPath+"/users/"+itoa(lr.User.ID)+":resetPassword", nil, h.admin).into(t, &rp)
	h.must(200, "POST", adminPath+"/users:login", map[string]string{"email": "temp@example.com", "password": rp.Password}, "").into(t, &lr)
	h.must(200, "GET", adminPath+"/sites", nil, lr.Token)
}
