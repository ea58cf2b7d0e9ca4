// Package testenv starts the real servers end-to-end tests need: a Temporal
// dev server from the CLI binary that temporal-dev.sh / `make tools` builds.
package testenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lorekb/lore/workflows"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
)

// RepoRoot walks up from the working directory to the directory with go.mod.
func RepoRoot() string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// TemporalCLI is the path of the Temporal CLI binary: $TEMPORAL_CLI or
// <repo>/bin/temporal.
func TemporalCLI() (string, error) {
	p := os.Getenv("TEMPORAL_CLI")
	if p == "" {
		p = filepath.Join(RepoRoot(), "bin", "temporal")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("temporal CLI not found at %s: run `make tools` (or set TEMPORAL_CLI)", p)
	}
	return p, nil
}

// DevServerArgs are the flags every dev server Lore starts gets
// (workflows.DevServerArgs: eager activity execution, the search attribute
// cache, Lore's custom search attributes; temporal-dev.sh passes the same).
var DevServerArgs = workflows.DevServerArgs()

// Temporal is a running dev server.
type Temporal struct {
	srv  *testsuite.DevServer
	Addr string
}

// StartTemporal starts a Temporal dev server (in-memory, no UI) and waits
// until it answers.
func StartTemporal() (*Temporal, error) {
	path, err := TemporalCLI()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  path,
		LogLevel:      "error",
		ExtraArgs:     DevServerArgs,
		ClientOptions: &client.Options{Namespace: "default"},
		Stdout:        io.Discard,
		Stderr:        io.Discard,
	})
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	return &Temporal{srv: srv, Addr: srv.FrontendHostPort()}, nil
}

// Stop stops the server.
func (t *Temporal) Stop() { _ = t.srv.Stop() }
