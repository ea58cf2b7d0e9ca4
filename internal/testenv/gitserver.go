package testenv

import (
	"fmt"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
)

// GitHTTPBackend is Debian's git http-backend (package git).
const GitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// GitServer is a real Git server for the sync tests: git http-backend behind
// net/http/cgi serving one bare repository (docs.git), which the test
// changes through a working clone.
type GitServer struct {
	srv  *httptest.Server
	Work string // the working clone
	bare string
}

// StartGitServer serves a new empty repository under dir.
func StartGitServer(dir string) (*GitServer, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("git is required (apt-get install git): %w", err)
	}
	if _, err := os.Stat(GitHTTPBackend); err != nil {
		return nil, fmt.Errorf("git http-backend is required (apt-get install git): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	g := &GitServer{bare: filepath.Join(dir, "docs.git"), Work: filepath.Join(dir, "work")}
	if err := g.Git(dir, "init", "-q", "--bare", "-b", "main", g.bare); err != nil {
		return nil, err
	}
	if err := g.Git(dir, "init", "-q", "-b", "main", g.Work); err != nil {
		return nil, err
	}
	g.srv = httptest.NewServer(&cgi.Handler{Path: GitHTTPBackend, Env: []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"}})
	return g, nil
}

// URL is the repository's clone URL.
func (g *GitServer) URL() string { return g.srv.URL + "/docs.git" }

// Close stops the server.
func (g *GitServer) Close() { g.srv.Close() }

// Git runs git in dir.
func (g *GitServer) Git(dir string, args ...string) error {
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v\n%s", args, err, out)
	}
	return nil
}

// Write sets files of the working clone (nil data removes one).
func (g *GitServer) Write(files map[string][]byte) error {
	for name, data := range files {
		p := filepath.Join(g.Work, name)
		if data == nil {
			_ = os.Remove(p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Commit commits everything and pushes it to the served repository.
func (g *GitServer) Commit(msg string) error {
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", msg}, {"push", "-q", g.bare, "main"}} {
		if err := g.Git(g.Work, args...); err != nil {
			return err
		}
	}
	return nil
}
