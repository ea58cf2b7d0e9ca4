// Package load drives an HTTP endpoint with a fixed number of keep-alive
// connections for a fixed time and summarises throughput and latency.
package load

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"
)

// NewClient returns an HTTP/1.1 keep-alive client that keeps up to conns
// idle connections to one host, so every worker reuses its own connection.
func NewClient(conns int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// Result is the outcome of one load run.
type Result struct {
	Requests int           // completed requests (any status)
	Errors   int           // non-2xx answers and transport errors
	Elapsed  time.Duration // measured wall time
	Lat      Latencies     // latency of every completed request
	FirstErr string        // one example error, for the report
}

// RPS is completed requests per second.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// URLFunc returns the URL of the next request of a worker; rng is the
// worker's own generator.
type URLFunc func(rng *rand.Rand) string

// Run sends GET requests from conns workers, each on its own keep-alive
// connection, first for warmup (discarded) then for dur (measured). A worker
// stops early when nothing but transport errors came back (the server is
// gone); the error return is only ever ctx's.
func Run(ctx context.Context, c *http.Client, conns int, warmup, dur time.Duration, next URLFunc) (Result, error) {
	if warmup > 0 {
		if _, err := run(ctx, c, conns, warmup, next); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	return run(ctx, c, conns, dur, next)
}

type worker struct {
	n, errs  int
	lat      []time.Duration
	firstErr string
}

func run(parent context.Context, c *http.Client, conns int, dur time.Duration, next URLFunc) (Result, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	ws := make([]*worker, conns)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(dur)
	for i := range ws {
		w := &worker{lat: make([]time.Duration, 0, 1<<14)}
		ws[i] = w
		rng := rand.New(rand.NewPCG(uint64(i)+1, uint64(start.UnixNano())))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, next(rng), nil)
				if err != nil {
					w.fail(err.Error())
					cancel()
					return
				}
				t0 := time.Now()
				res, err := c.Do(req)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					w.fail(err.Error())
					if w.n == 0 && w.errs > 50 {
						cancel() // the server is not answering at all
						return
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				w.lat = append(w.lat, time.Since(t0))
				w.n++
				if res.StatusCode < 200 || res.StatusCode > 299 {
					w.fail(fmt.Sprintf("%s -> HTTP %d", req.URL.Path, res.StatusCode))
				}
			}
		}()
	}
	wg.Wait()
	r := Result{Elapsed: time.Since(start)}
	for _, w := range ws {
		r.Requests += w.n
		r.Errors += w.errs
		r.Lat = append(r.Lat, w.lat...)
		if r.FirstErr == "" {
			r.FirstErr = w.firstErr
		}
	}
	r.Lat.Sort()
	// An endpoint that only fails is a result (reported with its errors),
	// not a reason to abort the run; only an interrupt is.
	return r, parent.Err()
}

func (w *worker) fail(msg string) {
	w.errs++
	if w.firstErr == "" {
		w.firstErr = msg
	}
}

// Latencies is a sortable list of durations with percentiles.
type Latencies []time.Duration

// Sort sorts in place (Percentile needs it).
func (l Latencies) Sort() { sort.Slice(l, func(i, j int) bool { return l[i] < l[j] }) }

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of a
// sorted list, or 0 for an empty one.
func (l Latencies) Percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(float64(len(l))*p/100+0.999999) - 1
	i = max(0, min(i, len(l)-1))
	return l[i]
}

// Collector gathers latencies from many goroutines.
type Collector struct {
	mu  sync.Mutex
	lat Latencies
}

// Add records one sample.
func (c *Collector) Add(d time.Duration) {
	c.mu.Lock()
	c.lat = append(c.lat, d)
	c.mu.Unlock()
}

// Sorted returns a sorted copy of the samples.
func (c *Collector) Sorted() Latencies {
	c.mu.Lock()
	out := append(Latencies(nil), c.lat...)
	c.mu.Unlock()
	out.Sort()
	return out
}

// Ms formats a duration in milliseconds with two decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
