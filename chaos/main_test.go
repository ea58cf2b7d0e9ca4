//go:build chaos

// Package chaos is Lore's fault suite: every piece runs as a real, separate
// process started by the test (a Temporal dev server on a persistent SQLite
// file, `lore serve` with the worker disabled, `lore worker`, PostgreSQL), and
// each scenario injects one fault (kill -9, restart, outage) into a running
// system, then checks what users would notice: lost or duplicated work,
// broken streams, wrong error codes.
//
// Run with `make chaos` (or `go test -tags chaos -run Chaos -v ./chaos/...`).
// CHAOS_DOCS sets the batch size (default 500; CI uses 100). CHAOS_LORE_BIN
// names a prebuilt lore binary; without it the test builds bin/lore.
package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/testenv"
)

// Shared by every scenario.
var (
	loreBin  string     // the lore binary
	temporal *devServer // the Temporal dev server (scenario c restarts it)
	tmpRoot  string     // temp directory of the run (Temporal database, logs)
)

// docsCount is CHAOS_DOCS (default 500).
func docsCount() int {
	if n, err := strconv.Atoi(os.Getenv("CHAOS_DOCS")); err == nil && n > 0 {
		return n
	}
	return 500
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) (code int) {
	start := time.Now()
	var err error
	tmpRoot, err = os.MkdirTemp("", "lore-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer func() {
		if code == 0 {
			_ = os.RemoveAll(tmpRoot)
		} else {
			fmt.Fprintf(os.Stderr, "chaos: logs kept in %s\n", tmpRoot)
		}
	}()
	if loreBin, err = buildLore(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	cli, err := testenv.TemporalCLI()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	temporal, err = startDevServer(cli, filepath.Join(tmpRoot, "temporal"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer killAll() // last: whatever a failed scenario left running
	defer temporal.Stop()
	code = m.Run()
	printTable(time.Since(start))
	return code
}

// buildLore returns CHAOS_LORE_BIN, or builds bin/lore from the repository
// root (what `make build` does) and returns its path.
func buildLore() (string, error) {
	if p := os.Getenv("CHAOS_LORE_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("CHAOS_LORE_BIN: %w", err)
		}
		return p, nil
	}
	root := testenv.RepoRoot()
	if root == "" {
		return "", fmt.Errorf("repository root (go.mod) not found")
	}
	out := filepath.Join(root, "bin", "lore")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -o bin/lore: %v\n%s", err, b)
	}
	return out, nil
}

// --- results table ---

type row struct{ fault, checked, result string }

var (
	resMu   sync.Mutex
	results []row
)

func record(fault, checked, result string) {
	resMu.Lock()
	defer resMu.Unlock()
	results = append(results, row{fault, checked, result})
}

func printTable(elapsed time.Duration) {
	resMu.Lock()
	defer resMu.Unlock()
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }
	var b strings.Builder
	fmt.Fprintf(&b, "\nChaos results (CHAOS_DOCS=%d, %s):\n\n", docsCount(), elapsed.Round(time.Second))
	b.WriteString("| fault | checked | result |\n|---|---|---|\n")
	rows := append([]row(nil), results...)
	// Scenarios run in file order; the table lists them by their letter.
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].fault < rows[j].fault })
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", esc(r.fault), esc(r.checked), esc(r.result))
	}
	fmt.Print(b.String())
}

// scenario records the checks of one fault.
type scenario struct {
	t      *testing.T
	fault  string
	checks int
	failed int
}

func newScenario(t *testing.T, fault string) *scenario {
	s := &scenario{t: t, fault: fault}
	t.Cleanup(func() {
		if t.Failed() && s.failed == 0 {
			record(fault, "scenario ran to the end", "FAIL: aborted (see the test log)")
		}
	})
	return s
}

// check records one verified property; a failed one fails the test but the
// scenario goes on, so the table shows every check.
func (s *scenario) check(checked string, ok bool, format string, args ...any) bool {
	s.t.Helper()
	s.checks++
	detail := fmt.Sprintf(format, args...)
	res := "PASS"
	if detail != "" {
		res += " (" + detail + ")"
	}
	if !ok {
		s.failed++
		res = "FAIL: " + detail
		s.t.Errorf("%s: %s: %s", s.fault, checked, detail)
	}
	record(s.fault, checked, res)
	return ok
}

// fatalf records a failed step and stops the scenario.
func (s *scenario) fatalf(checked, format string, args ...any) {
	s.t.Helper()
	s.failed++
	detail := fmt.Sprintf(format, args...)
	record(s.fault, checked, "FAIL: "+detail)
	s.t.Fatalf("%s: %s: %s", s.fault, checked, detail)
}

// logf logs with the elapsed time, so the -v output reads as a timeline.
func (s *scenario) logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf(format, args...)
}
