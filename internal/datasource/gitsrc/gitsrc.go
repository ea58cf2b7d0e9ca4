// Package gitsrc reads a branch of a Git repository for a sync: a bare
// clone kept in a cache folder (fetched again on each sync), the files of
// the branch's head that match the data source's globs, and their blobs.
// It speaks Git's smart HTTP protocol through go-git (pure Go); every
// request goes through the transport the caller puts in the context (the
// outbound guard), with a bound on the bytes one clone or fetch may read.
package gitsrc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Config is a git data source's config.
type Config struct {
	URL    string   `json:"url"`
	Branch string   `json:"branch"`
	Paths  []string `json:"paths,omitempty"` // globs (** crosses folders); none: every file
	Token  string   `json:"token,omitempty"` // sent as HTTP basic auth password
}

// Bounds of a config.
const (
	MaxPaths   = 50
	MaxPathLen = 300
)

// Validate checks the config's shape (the address rules are the caller's:
// netguard at save and at connect). Plain http is accepted only for a
// literal address or localhost, which the guard allows only when the
// operator did (LORE_ALLOWED_PROVIDER_HOSTS).
func (c *Config) Validate() error {
	c.URL = strings.TrimSpace(c.URL)
	u, err := url.Parse(c.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New("config.url: an https:// URL of a Git repository")
	}
	if u.User != nil {
		return errors.New("config.url: must not carry credentials; send the token in config.token")
	}
	if u.Scheme == "http" && !literalHost(u.Hostname()) {
		return errors.New("config.url: use https:// (plain http only for an internal address the operator allowed)")
	}
	if len(c.URL) > 2000 {
		return errors.New("config.url: at most 2000 characters")
	}
	c.Branch = strings.TrimSpace(c.Branch)
	if c.Branch != "" && (len(c.Branch) > 200 || !plumbing.NewBranchReferenceName(c.Branch).IsBranch() ||
		strings.ContainsAny(c.Branch, " ~^:?*[\\") || strings.Contains(c.Branch, "..")) {
		return errors.New("config.branch: not a valid branch name")
	}
	if len(c.Paths) > MaxPaths {
		return fmt.Errorf("config.paths: at most %d globs", MaxPaths)
	}
	for i, p := range c.Paths {
		p = strings.TrimPrefix(strings.TrimSpace(p), "/")
		if p == "" || len(p) > MaxPathLen {
			return fmt.Errorf("config.paths[%d]: a glob of 1 to %d characters", i, MaxPathLen)
		}
		if _, err := globRegexp(p); err != nil {
			return fmt.Errorf("config.paths[%d]: %v", i, err)
		}
		c.Paths[i] = p
	}
	if len(c.Token) > 4096 {
		return errors.New("config.token: at most 4096 characters")
	}
	return nil
}

func literalHost(h string) bool {
	return net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// globRegexp compiles a glob: * and ? stay within a folder, ** crosses
// folders ("docs/**/*.md" matches docs/a.md and docs/x/y/a.md).
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case c == '*' && i+1 < len(glob) && glob[i+1] == '*':
			i++
			if i+1 < len(glob) && glob[i+1] == '/' {
				i++
				b.WriteString("(?:.*/)?")
			} else {
				b.WriteString(".*")
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// Matcher reports whether a path matches one of the config's globs (every
// path when there are none).
func (c *Config) Matcher() func(string) bool {
	var res []*regexp.Regexp
	for _, p := range c.Paths {
		if re, err := globRegexp(p); err == nil {
			res = append(res, re)
		}
	}
	return func(p string) bool {
		if len(res) == 0 {
			return true
		}
		for _, re := range res {
			if re.MatchString(p) {
				return true
			}
		}
		return false
	}
}

func (c *Config) auth() transport.AuthMethod {
	if c.Token == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: "lore", Password: c.Token}
}

// ctxKey carries the transport of one operation in its context.
type ctxKey struct{}

type bounded struct {
	rt   http.RoundTripper
	left *atomic.Int64
	max  int64
}

// The go-git HTTP protocols are process-wide: they take each request's
// transport from its context, so a request without one (not made by this
// package) is refused instead of going out unguarded.
func init() {
	c := &http.Client{Transport: ctxTransport{}, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 3 {
			return errors.New("more than 3 redirects")
		}
		return nil
	}}
	client.InstallProtocol("https", githttp.NewClient(c))
	client.InstallProtocol("http", githttp.NewClient(c))
}

type ctxTransport struct{}

// ErrTooLarge is returned when a clone or fetch reads more than its bound.
var ErrTooLarge = errors.New("the repository is larger than the sync allows")

func (ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, ok := req.Context().Value(ctxKey{}).(*bounded)
	if !ok || b.rt == nil {
		return nil, errors.New("gitsrc: no outbound transport for this request")
	}
	res, err := b.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	res.Body = &limitBody{ReadCloser: res.Body, b: b}
	return res, nil
}

type limitBody struct {
	io.ReadCloser
	b *bounded
}

func (l *limitBody) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	if l.b.left.Add(-int64(n)) < 0 {
		return n, fmt.Errorf("%w (more than %d MiB read)", ErrTooLarge, l.b.max>>20)
	}
	return n, err
}

// Client reaches repositories through a transport with a bound on the
// bytes read by one operation.
type Client struct {
	Transport http.RoundTripper
	MaxBytes  int64 // per clone or fetch; 0: 1 GiB
	CacheDir  string
}

func (cl *Client) ctx(ctx context.Context) context.Context {
	max := cl.MaxBytes
	if max <= 0 {
		max = 1 << 30
	}
	left := new(atomic.Int64)
	left.Store(max)
	return context.WithValue(ctx, ctxKey{}, &bounded{rt: cl.Transport, left: left, max: max})
}

// DefaultBranch asks the remote for its branches and returns branch when it
// exists, or the remote's default branch when branch is "" (a check at save:
// the repository is reachable with the token).
func (cl *Client) DefaultBranch(ctx context.Context, cfg Config) (string, error) {
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{cfg.URL}})
	refs, err := rem.ListContext(cl.ctx(ctx), &git.ListOptions{Auth: cfg.auth()})
	if err != nil {
		return "", cleanErr(err, cfg)
	}
	head := ""
	branches := map[string]bool{}
	for _, r := range refs {
		if r.Name() == plumbing.HEAD && r.Type() == plumbing.SymbolicReference {
			head = r.Target().Short()
		}
		if r.Name().IsBranch() {
			branches[r.Name().Short()] = true
		}
	}
	if cfg.Branch != "" {
		if !branches[cfg.Branch] {
			return "", fmt.Errorf("branch %q does not exist in the repository", cfg.Branch)
		}
		return cfg.Branch, nil
	}
	if head != "" && branches[head] {
		return head, nil
	}
	for _, b := range []string{"main", "master"} {
		if branches[b] {
			return b, nil
		}
	}
	return "", errors.New("the repository has no branch; set config.branch")
}

// cleanErr keeps the token out of an error's text.
func cleanErr(err error, cfg Config) error {
	msg := err.Error()
	if cfg.Token != "" {
		msg = strings.ReplaceAll(msg, cfg.Token, "***")
	}
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("%w: %s", ErrTooLarge, msg)
	}
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) {
		return fmt.Errorf("the repository refused the credentials (config.token): %s", msg)
	}
	return errors.New(msg)
}

// Repo is a bare clone of one branch in the cache.
type Repo struct {
	cfg Config
	c   *cached
}

// cached is a clone opened once per process: opening one reads the index
// of every pack, which a re-sync that finds little changed would otherwise
// pay twice (plan, then apply). Its lock takes one operation at a time:
// the storage keeps its packs open and reads them through shared file
// positions, and a fetch or a repack changes them. A read holds it for
// microseconds (converting a file happens outside).
type cached struct {
	mu   sync.Mutex
	repo *git.Repository // nil until opened
}

// clones are the cache folders opened by this process.
var clones sync.Map

func cachedAt(dir string) *cached {
	c, _ := clones.LoadOrStore(dir, &cached{})
	return c.(*cached)
}

// dir is the cache folder of a data source's repository: a new URL or
// branch gets a new clone.
func (cl *Client) dir(id int64, cfg Config) string {
	h := sha256.Sum256([]byte(cfg.URL + "\x00" + cfg.Branch))
	return filepath.Join(cl.CacheDir, fmt.Sprintf("%d-%s", id, hex.EncodeToString(h[:6])))
}

// Cloned reports whether the data source's branch has a clone in the cache.
func (cl *Client) Cloned(id int64, cfg Config) bool {
	_, err := os.Stat(cl.dir(id, cfg))
	return err == nil
}

// maxPacks is how many packs a clone keeps before they are repacked into
// one: each fetch adds a pack, and every object lookup searches them all.
const maxPacks = 16

// Open returns the cached clone of the data source's branch, cloned when
// absent, fetched when fetch is set or when want (a commit) is missing.
func (cl *Client) Open(ctx context.Context, id int64, cfg Config, fetch bool, want string) (*Repo, error) {
	dir := cl.dir(id, cfg)
	c := cachedAt(dir)
	if !fetch && want != "" {
		c.mu.Lock()
		ok := c.repo != nil && c.has(want)
		c.mu.Unlock()
		if ok {
			return &Repo{cfg: cfg, c: c}, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := os.Stat(dir); err != nil && c.repo != nil {
		c.closePacks() // removed under this process
		c.repo = nil
	}
	if c.repo == nil {
		repo, cloned, err := cl.openDir(ctx, dir, cfg)
		if err != nil {
			return nil, err
		}
		c.repo = repo
		fetch = fetch && !cloned
	}
	if want != "" && !c.has(want) {
		c.reindex() // another process may have fetched it into the folder
		fetch = fetch || !c.has(want)
	}
	if fetch {
		spec := gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/heads/%s", cfg.Branch, cfg.Branch))
		err := c.repo.FetchContext(cl.ctx(ctx), &git.FetchOptions{RemoteName: "origin", RefSpecs: []gitconfig.RefSpec{spec},
			Auth: cfg.auth(), Tags: git.NoTags, Force: true})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil, cleanErr(err, cfg)
		}
		if err == nil {
			c.repack()
		}
	}
	r := &Repo{cfg: cfg, c: c}
	// The first lookup loads the packs' indexes into the storage: done here,
	// under the write lock, the reads that share the clone only read them.
	if head, err := r.head(); err == nil {
		c.has(head)
	}
	return r, nil
}

// has reports whether the clone has a commit.
func (c *cached) has(commit string) bool {
	_, err := c.repo.CommitObject(plumbing.NewHash(commit))
	return err == nil
}

// repack merges the packs into one once there are more than maxPacks, and
// makes the storage read the packs again. It keeps the clone usable when it
// fails: the old packs go only once the new one is written.
func (c *cached) repack() {
	packs, err := c.repo.Storer.(storer.PackedObjectStorer).ObjectPacks()
	if err != nil || len(packs) <= maxPacks {
		return
	}
	_ = c.repo.RepackObjects(&git.RepackConfig{})
	c.reindex()
}

// reindex makes the storage list and read the packs again (closing the
// ones it holds open, some of which a repack removed).
func (c *cached) reindex() {
	c.closePacks()
	if r, ok := c.repo.Storer.(interface{ Reindex() }); ok {
		r.Reindex()
	}
}

// closePacks closes the pack files the storage holds open; it opens them
// again as it reads.
func (c *cached) closePacks() {
	if cl, ok := c.repo.Storer.(interface{ Close() error }); ok {
		_ = cl.Close()
	}
}

// openDir opens the clone in dir, cloning it first when there is none;
// cloned says it was just cloned (nothing to fetch).
func (cl *Client) openDir(ctx context.Context, dir string, cfg Config) (repo *git.Repository, cloned bool, err error) {
	if repo, err := openClone(dir); err == nil {
		return repo, false, nil
	}
	_ = os.RemoveAll(dir) // a partial clone of a killed process
	if err := os.MkdirAll(cl.CacheDir, 0o700); err != nil {
		return nil, false, err
	}
	tmp, err := os.MkdirTemp(cl.CacheDir, ".clone-")
	if err != nil {
		return nil, false, err
	}
	_, err = git.PlainCloneContext(cl.ctx(ctx), tmp, true, &git.CloneOptions{URL: cfg.URL, Auth: cfg.auth(),
		ReferenceName: plumbing.NewBranchReferenceName(cfg.Branch), SingleBranch: true, Tags: git.NoTags, NoCheckout: true})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, false, cleanErr(err, cfg)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, false, err
	}
	repo, err = openClone(dir)
	return repo, true, err
}

// openPacks is how many pack files a clone keeps open (the ones read
// last): without, every object read opens its pack, reads its header and
// closes it again, most of the cost of reading a small file.
const openPacks = 4

// openClone opens a bare clone with its packs kept open (the clone is
// opened once per process and shared).
func openClone(dir string) (*git.Repository, error) {
	if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
		return nil, err
	}
	st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(), filesystem.Options{MaxOpenDescriptors: openPacks})
	return git.Open(st, nil)
}

// Head is the commit the branch points at.
func (r *Repo) Head() (string, error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.head()
}

func (r *Repo) head() (string, error) {
	for _, name := range []plumbing.ReferenceName{plumbing.NewBranchReferenceName(r.cfg.Branch),
		plumbing.NewRemoteReferenceName("origin", r.cfg.Branch)} {
		if ref, err := r.c.repo.Reference(name, true); err == nil {
			return ref.Hash().String(), nil
		}
	}
	return "", fmt.Errorf("branch %q is not in the repository", r.cfg.Branch)
}

// File is one file of a commit.
type File struct {
	Path string
	Blob string // the blob id: the same bytes have the same id
}

// ErrTooMany is returned when a commit has more matching files than the
// bound.
var ErrTooMany = errors.New("too many files")

// Files lists the files of a commit that keep(path) accepts, by path, at
// most max of them. It reads the trees only: a file's blob id is in its
// tree entry, and reading every blob (what tree.Files does, for the size)
// was most of a sync that finds little changed. It walks the trees' entries
// itself: go-git's tree walker checks every path it yields piece by piece,
// most of the walk's time; an entry whose name no tree may hold (empty, a
// dot or two, a slash) is skipped.
func (r *Repo) Files(commit string, keep func(string) bool, max int) ([]File, error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	c, err := r.c.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var out []File
	var walk func(t *object.Tree, prefix string) error
	walk = func(t *object.Tree, prefix string) error {
		for _, e := range t.Entries {
			if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
				continue
			}
			name := prefix + e.Name
			if e.Mode == filemode.Dir {
				sub, err := object.GetTree(r.c.repo.Storer, e.Hash)
				if err != nil {
					return err
				}
				if err := walk(sub, name+"/"); err != nil {
					return err
				}
				continue
			}
			if !e.Mode.IsFile() || !keep(name) {
				continue // a submodule, or not wanted
			}
			if len(out) >= max {
				return fmt.Errorf("%w: more than %d matching files at %s; narrow config.paths", ErrTooMany, max, commit[:min(len(commit), 12)])
			}
			out = append(out, File{Path: name, Blob: e.Hash.String()})
		}
		return nil
	}
	if err := walk(tree, ""); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ErrBlobTooLarge is returned for a file over the read bound.
var ErrBlobTooLarge = errors.New("the file is larger than the import allows")

// ReadBlob reads a blob's bytes, at most max.
func (r *Repo) ReadBlob(id string, max int64) ([]byte, error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	b, err := r.c.repo.BlobObject(plumbing.NewHash(id))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", id, err)
	}
	if b.Size > max {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBlobTooLarge, b.Size, max)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(io.LimitReader(rd, max))
}
