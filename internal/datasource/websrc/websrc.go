// Package websrc reads a website for a sync: the pages a sitemap lists, or
// those reached by following links from a start page, never outside a URL
// prefix, as robots.txt allows, one request at a time with a pause between
// them, each bounded in bytes and time, conditional on the validators
// (ETag, Last-Modified) of the last sync.
package websrc

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// Config is a web data source's config.
type Config struct {
	URL      string `json:"url"`                 // a sitemap (.xml) or a start page
	Prefix   string `json:"prefix,omitempty"`    // pages must stay under it; default: the URL's folder
	MaxPages int    `json:"max_pages,omitempty"` // default DefaultMaxPages
	DelayMS  int    `json:"delay_ms,omitempty"`  // pause between requests; default DefaultDelayMS
	// TimeoutMS bounds one page's request, redirects and body included.
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// Bounds and defaults of a config.
const (
	DefaultMaxPages = 200
	MaxPages        = 5000
	DefaultDelayMS  = 500
	MinDelayMS      = 50
	MaxDelayMS      = 60000
	MaxURLLen       = 1024
	DefaultTimeout  = 20000
	MinTimeoutMS    = 1000
	MaxTimeoutMS    = 120000
)

// Validate checks and completes the config (the address rules are the
// caller's: netguard at save and at connect).
func (c *Config) Validate() error {
	c.URL = strings.TrimSpace(c.URL)
	u, err := url.Parse(c.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || len(c.URL) > MaxURLLen {
		return fmt.Errorf("config.url: an http(s) URL of a sitemap or a start page, at most %d characters", MaxURLLen)
	}
	if u.User != nil {
		return errors.New("config.url: must not carry credentials")
	}
	c.URL = Normalize(u)
	if strings.TrimSpace(c.Prefix) == "" {
		p := *u
		p.RawQuery, p.Fragment = "", ""
		p.Path = p.Path[:strings.LastIndex(p.Path, "/")+1]
		if p.Path == "" {
			p.Path = "/"
		}
		c.Prefix = p.String()
	}
	c.Prefix = strings.TrimSpace(c.Prefix)
	pu, err := url.Parse(c.Prefix)
	if err != nil || pu.Host == "" || (pu.Scheme != "https" && pu.Scheme != "http") || len(c.Prefix) > MaxURLLen {
		return errors.New("config.prefix: an http(s) URL the pages must start with")
	}
	if pu.Path == "" {
		pu.Path = "/"
	}
	c.Prefix = pu.String()
	if !c.IsSitemap() && !Under(c.URL, c.Prefix) {
		return errors.New("config.url: the start page must be under config.prefix")
	}
	switch {
	case c.MaxPages == 0:
		c.MaxPages = DefaultMaxPages
	case c.MaxPages < 1 || c.MaxPages > MaxPages:
		return fmt.Errorf("config.max_pages: 1 to %d", MaxPages)
	}
	switch {
	case c.DelayMS == 0:
		c.DelayMS = DefaultDelayMS
	case c.DelayMS < MinDelayMS || c.DelayMS > MaxDelayMS:
		return fmt.Errorf("config.delay_ms: %d to %d", MinDelayMS, MaxDelayMS)
	}
	switch {
	case c.TimeoutMS == 0:
		c.TimeoutMS = DefaultTimeout
	case c.TimeoutMS < MinTimeoutMS || c.TimeoutMS > MaxTimeoutMS:
		return fmt.Errorf("config.timeout_ms: %d to %d", MinTimeoutMS, MaxTimeoutMS)
	}
	return nil
}

// IsSitemap reports whether the URL names a sitemap (a path ending in .xml).
func (c *Config) IsSitemap() bool {
	u, err := url.Parse(c.URL)
	return err == nil && strings.HasSuffix(strings.ToLower(u.Path), ".xml")
}

// Normalize drops the fragment and a default port: the key of a page.
func Normalize(u *url.URL) string {
	v := *u
	v.Fragment, v.RawFragment = "", ""
	v.Scheme, v.Host = strings.ToLower(v.Scheme), strings.ToLower(v.Host)
	if (v.Scheme == "https" && strings.HasSuffix(v.Host, ":443")) || (v.Scheme == "http" && strings.HasSuffix(v.Host, ":80")) {
		v.Host = v.Host[:strings.LastIndex(v.Host, ":")]
	}
	if v.Path == "" {
		v.Path = "/"
	}
	return v.String()
}

// Under reports whether a page URL is under the prefix.
func Under(page, prefix string) bool { return strings.HasPrefix(page, prefix) }

// Fetcher gets pages one at a time.
type Fetcher struct {
	Client    *http.Client // its redirects are not followed (Get follows them itself, under the prefix)
	MaxBytes  int64
	Timeout   time.Duration // per request, redirects included
	UserAgent string
}

// Page is the answer for one page.
type Page struct {
	Status       int
	NotModified  bool // 304: the validators still hold
	Gone         bool // 404 or 410: the page was removed
	Body         []byte
	ContentType  string
	ETag         string
	LastModified string
	FinalURL     string
}

// ErrFetch wraps a page that could not be read (a reason for its item).
var ErrFetch = errors.New("page failed")

// Get fetches a page, sending the validators of the last sync, following
// at most 5 redirects that stay under prefix.
func (f *Fetcher) Get(ctx context.Context, page, etag, lastModified, prefix string) (*Page, error) {
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	cur := page
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cur, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFetch, err)
		}
		req.Header.Set("User-Agent", f.UserAgent)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		if lastModified != "" {
			req.Header.Set("If-Modified-Since", lastModified)
		}
		res, err := f.Client.Do(req)
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return nil, fmt.Errorf("%w: no answer within %s", ErrFetch, f.Timeout)
			}
			return nil, fmt.Errorf("%w: %v", ErrFetch, err)
		}
		if res.StatusCode >= 300 && res.StatusCode < 400 && res.StatusCode != http.StatusNotModified {
			loc := res.Header.Get("Location")
			res.Body.Close()
			next, err := res.Request.URL.Parse(loc)
			if loc == "" || err != nil {
				return nil, fmt.Errorf("%w: HTTP %d without a usable Location", ErrFetch, res.StatusCode)
			}
			if hop >= 5 {
				return nil, fmt.Errorf("%w: more than 5 redirects", ErrFetch)
			}
			n := Normalize(next)
			if !Under(n, prefix) {
				return nil, fmt.Errorf("%w: redirected outside the prefix, to %s", ErrFetch, clip(n, 200))
			}
			cur = n
			continue
		}
		defer res.Body.Close()
		p := &Page{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), ETag: res.Header.Get("ETag"),
			LastModified: res.Header.Get("Last-Modified"), FinalURL: cur}
		switch {
		case res.StatusCode == http.StatusNotModified:
			p.NotModified = true
			p.ETag, p.LastModified = firstNonEmpty(p.ETag, etag), firstNonEmpty(p.LastModified, lastModified)
			return p, nil
		case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
			p.Gone = true
			return p, nil
		case res.StatusCode < 200 || res.StatusCode > 299:
			return nil, fmt.Errorf("%w: HTTP %d", ErrFetch, res.StatusCode)
		}
		if res.ContentLength > f.MaxBytes {
			return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrFetch, res.ContentLength, f.MaxBytes)
		}
		body, err := io.ReadAll(io.LimitReader(res.Body, f.MaxBytes+1))
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return nil, fmt.Errorf("%w: the body did not arrive within %s", ErrFetch, f.Timeout)
			}
			return nil, fmt.Errorf("%w: %v", ErrFetch, err)
		}
		if int64(len(body)) > f.MaxBytes {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrFetch, f.MaxBytes)
		}
		p.Body = body
		return p, nil
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Sitemap bounds.
const (
	MaxSitemaps = 20
)

// ParseSitemap reads a sitemap: the page URLs of a urlset, or the sitemap
// URLs of a sitemap index.
func ParseSitemap(body []byte) (pages, sitemaps []string, err error) {
	var doc struct {
		XMLName xml.Name
		URLs    []struct {
			Loc string `xml:"loc"`
		} `xml:"url"`
		Sitemaps []struct {
			Loc string `xml:"loc"`
		} `xml:"sitemap"`
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("not a sitemap: %v", err)
	}
	switch doc.XMLName.Local {
	case "urlset":
		for _, u := range doc.URLs {
			pages = append(pages, strings.TrimSpace(u.Loc))
		}
	case "sitemapindex":
		for _, s := range doc.Sitemaps {
			sitemaps = append(sitemaps, strings.TrimSpace(s.Loc))
		}
	default:
		return nil, nil, fmt.Errorf("not a sitemap: the root element is <%s>, not <urlset> or <sitemapindex>", doc.XMLName.Local)
	}
	return pages, sitemaps, nil
}

// MaxLinks bounds the links kept from one page.
const MaxLinks = 500

// Links returns the page's <a href> links under prefix, absolute and
// normalised, each once, in document order.
func Links(body []byte, base, prefix string) []string {
	bu, err := url.Parse(base)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	z := html.NewTokenizer(bytes.NewReader(body))
	for len(out) < MaxLinks {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if string(name) == "base" && hasAttr {
			for {
				k, v, more := z.TagAttr()
				if string(k) == "href" {
					if nb, err := bu.Parse(string(v)); err == nil {
						bu = nb
					}
				}
				if !more {
					break
				}
			}
			continue
		}
		if string(name) != "a" || !hasAttr {
			continue
		}
		for {
			k, v, more := z.TagAttr()
			if string(k) == "href" {
				if u, err := bu.Parse(strings.TrimSpace(string(v))); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
					n := Normalize(u)
					if Under(n, prefix) && len(n) <= MaxURLLen && !seen[n] {
						seen[n] = true
						out = append(out, n)
					}
				}
			}
			if !more {
				break
			}
		}
	}
	return out
}

// Robots is what a site's robots.txt allows the sync (the group naming
// Lore's agent, else the * group).
type Robots struct {
	Allow      []string      `json:"allow,omitempty"`
	Disallow   []string      `json:"disallow,omitempty"`
	CrawlDelay time.Duration `json:"crawl_delay,omitempty"`
	// Closed: robots.txt could not be read (a 5xx or no answer), which
	// means nothing may be fetched.
	Closed string `json:"closed,omitempty"`
}

// Agent is the product token the sync sends and looks for in robots.txt.
const Agent = "LoreBot"

// ParseRobots reads a robots.txt for Agent.
func ParseRobots(body []byte) *Robots {
	type group struct {
		agents []string
		r      Robots
	}
	var groups []*group
	var cur *group
	inAgents := false
	for _, line := range strings.Split(string(body), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch k {
		case "user-agent":
			if !inAgents || cur == nil {
				cur = &group{}
				groups = append(groups, cur)
			}
			cur.agents = append(cur.agents, strings.ToLower(v))
			inAgents = true
		case "allow", "disallow", "crawl-delay":
			inAgents = false
			if cur == nil {
				continue
			}
			switch k {
			case "allow":
				if v != "" {
					cur.r.Allow = append(cur.r.Allow, v)
				}
			case "disallow":
				if v != "" {
					cur.r.Disallow = append(cur.r.Disallow, v)
				}
			case "crawl-delay":
				if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
					cur.r.CrawlDelay = min(time.Duration(s*float64(time.Second)), 30*time.Second)
				}
			}
		}
	}
	var star *Robots
	for _, g := range groups {
		for _, a := range g.agents {
			if a != "*" && strings.Contains(strings.ToLower(Agent), a) {
				r := g.r
				return &r
			}
			if a == "*" && star == nil {
				r := g.r
				star = &r
			}
		}
	}
	if star != nil {
		return star
	}
	return &Robots{}
}

// Allowed reports whether the rules let the sync fetch a URL: the longest
// matching rule wins, Allow on a tie.
func (r *Robots) Allowed(raw string) bool {
	if r == nil {
		return true
	}
	if r.Closed != "" {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	best, allow := -1, true
	for _, rule := range r.Allow {
		if n := ruleMatch(rule, p); n > best || (n == best && n >= 0) {
			best, allow = n, true
		}
	}
	for _, rule := range r.Disallow {
		if n := ruleMatch(rule, p); n > best {
			best, allow = n, false
		}
	}
	return allow
}

// ruleMatch is the rule's length when it matches the path (-1 when not):
// * matches any run, a final $ anchors the end.
func ruleMatch(rule, p string) int {
	anchored := strings.HasSuffix(rule, "$")
	body := strings.TrimSuffix(rule, "$")
	var b strings.Builder
	b.WriteString("^")
	for _, part := range strings.Split(body, "*") {
		b.WriteString(regexp.QuoteMeta(part))
		b.WriteString(".*")
	}
	expr := strings.TrimSuffix(b.String(), ".*")
	if anchored {
		expr += "$"
	}
	re, err := regexp.Compile(expr)
	if err != nil || !re.MatchString(p) {
		return -1
	}
	return len(rule)
}

// RobotsURL is the robots.txt of the site of a URL.
func RobotsURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}).String()
}

// FetchRobots reads the site's robots.txt: missing (4xx) allows everything,
// unreadable (5xx, no answer) closes the site (RFC 9309).
func (f *Fetcher) FetchRobots(ctx context.Context, site string) *Robots {
	ru := RobotsURL(site)
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ru, nil)
	if err != nil {
		return &Robots{Closed: err.Error()}
	}
	req.Header.Set("User-Agent", f.UserAgent)
	res, err := f.Client.Do(req)
	if err != nil {
		return &Robots{Closed: fmt.Sprintf("robots.txt could not be read: %v", err)}
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode >= 500:
		return &Robots{Closed: fmt.Sprintf("robots.txt answered HTTP %d", res.StatusCode)}
	case res.StatusCode >= 300:
		return &Robots{} // missing, or elsewhere: no rules
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512<<10))
	return ParseRobots(body)
}

// Ext is the file extension the converters read a page by, from its
// content type ("html" by default).
func Ext(contentType, page string) string {
	ct := strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	switch ct {
	case "text/markdown", "text/x-markdown":
		return "md"
	case "text/plain":
		return "txt"
	case "application/pdf":
		return "pdf"
	case "text/csv":
		return "csv"
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return "docx"
	}
	return "html"
}
