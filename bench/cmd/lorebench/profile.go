package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// profileLevel fetches lore's CPU, mutex and block profiles over the
// largest concurrent chat level into -chat-profile (lore then runs with
// LORE_PPROF_ADDR, which also turns mutex and block profiling on), and the
// CPU profile of the Temporal server on PostgreSQL when that one runs; the
// returned function waits for them. Each covers the level's first rounds
// seconds (a turn takes at least that long at this load), not its tail.
func (b *bench) profileLevel(ctx context.Context, conc, rounds int) func() {
	o := b.o
	if o.chatProfile == "" || b.lorePprof == "" || conc != slices.Max(o.chatLevels()) {
		return func() {}
	}
	if err := os.MkdirAll(o.chatProfile, 0o755); err != nil {
		logf("C: profiles: %v", err)
		return func() {}
	}
	secs := max(rounds, 2)
	var wg sync.WaitGroup
	for _, p := range []string{"profile", "mutex", "block"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(o.chatProfile, fmt.Sprintf("lore-%s-%d%s.pb.gz", p, conc, b.rep.suffixName()))
			if err := fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", b.lorePprof, p, secs), path, secs); err != nil {
				logf("C: profile %s: %v", p, err)
				return
			}
			logf("C: lore %s profile over %d s at %d concurrent: %s", p, secs, conc, path)
		}()
	}
	if b.temporalPprof != "" {
		// The PostgreSQL-backed server's CPU over the same seconds: what the
		// engine spends its share of a turn on.
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(o.chatProfile, fmt.Sprintf("temporal-profile-%d%s.pb.gz", conc, b.rep.suffixName()))
			if err := fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.temporalPprof, secs), path, secs); err != nil {
				logf("C: Temporal server profile: %v", err)
				return
			}
			logf("C: Temporal server CPU profile over %d s at %d concurrent: %s", secs, conc, path)
		}()
	}
	return wg.Wait
}

func fetchProfile(ctx context.Context, url, path string, secs int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs+30)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, res.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
