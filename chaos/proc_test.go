//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lorekb/lore/internal/testenv"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// proc is one child process; its stdout and stderr go to a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	err     error
}

var (
	procsMu sync.Mutex
	procs   = map[*proc]bool{}
)

// startProc starts bin with args and env (the complete environment).
func startProc(name, logPath, bin string, args, env []string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group (a Ctrl-C of the test does not hit it directly) and
	// killed with the test binary if that dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	procsMu.Lock()
	procs[p] = true
	procsMu.Unlock()
	go func() {
		p.err = cmd.Wait()
		f.Close()
		procsMu.Lock()
		delete(procs, p)
		procsMu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill9 sends SIGKILL and waits for the process to be gone.
func (p *proc) Kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to timeout, then SIGKILL. It reports
// whether the process exited by itself.
func (p *proc) Stop(timeout time.Duration) bool {
	if p.Exited() {
		return true
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		p.Kill9()
		return false
	}
}

// Tail returns the last n lines of the process log.
func (p *proc) Tail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// killAll kills every child still running.
func killAll() {
	procsMu.Lock()
	var ps []*proc
	for p := range procs {
		ps = append(ps, p)
	}
	procsMu.Unlock()
	for _, p := range ps {
		p.Kill9()
	}
}

// freePort returns a TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// baseEnv is the environment every child starts from: only what a process
// needs to run, so the developer's own Lore variables never leak in.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// --- Temporal dev server ---

// devServer is `temporal server start-dev` on a persistent SQLite file, so
// it can be stopped and started again with its state.
type devServer struct {
	cli    string
	dir    string
	dbFile string
	port   int
	Addr   string
	p      *proc
	starts int

	clientMu sync.Mutex
	client   client.Client
}

func startDevServer(cli, dir string) (*devServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &devServer{cli: cli, dir: dir, dbFile: dir + "/temporal.db", port: port, Addr: "127.0.0.1:" + strconv.Itoa(port)}
	return s, s.Start()
}

// Start starts the server (again) on the same port and database file and
// waits until the default namespace answers.
func (s *devServer) Start() error {
	s.starts++
	args := []string{"server", "start-dev", "--headless", "--db-filename", s.dbFile, "--ip", "127.0.0.1",
		"--port", strconv.Itoa(s.port), "--log-level", "error"}
	args = append(args, testenv.DevServerArgs...)
	p, err := startProc("temporal", fmt.Sprintf("%s/temporal-%d.log", s.dir, s.starts), s.cli, args, baseEnv())
	if err != nil {
		return err
	}
	s.p = p
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.waitReady(ctx); err != nil {
		p.Kill9()
		return fmt.Errorf("temporal dev server did not become ready: %w\n%s", err, p.Tail(30))
	}
	return nil
}

func (s *devServer) waitReady(ctx context.Context) error {
	var last error
	for {
		if s.p.Exited() {
			return fmt.Errorf("exited: %v", s.p.err)
		}
		last = s.ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *devServer) ready(ctx context.Context) error {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	c.Close()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: s.Addr, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer nc.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = nc.Describe(dctx, "default")
	return err
}

// Stop sends SIGTERM and waits for the server to exit.
func (s *devServer) Stop() bool {
	if s.p == nil {
		return true
	}
	return s.p.Stop(60 * time.Second)
}

// Client is a client of the server for the test's own calls (it reconnects
// by itself across restarts).
func (s *devServer) Client() (client.Client, error) {
	s.clientMu.Lock()
	defer s.clientMu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	c, err := client.Dial(client.Options{HostPort: s.Addr, Namespace: "default", Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	s.client = c
	return c, nil
}

// PollerOf reports whether a process with the pid polls the task queue (the
// SDK's default worker identity starts with "<pid>@").
func (s *devServer) PollerOf(ctx context.Context, queue string, pid int) (bool, error) {
	c, err := s.Client()
	if err != nil {
		return false, err
	}
	prefix := strconv.Itoa(pid) + "@"
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := c.DescribeTaskQueue(dctx, queue, typ)
		cancel()
		if err != nil {
			return false, err
		}
		found := false
		for _, p := range res.GetPollers() {
			if strings.HasPrefix(p.GetIdentity(), prefix) {
				found = true
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// --- small helpers ---

// waitFor polls cond every interval until it returns true or the timeout
// passes; it returns the last error cond gave (nil when it succeeded).
func waitFor(timeout, interval time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last == nil {
				last = errors.New("condition not met")
			}
			return fmt.Errorf("after %s: %w", timeout, last)
		}
		time.Sleep(interval)
	}
}

// clip shortens s for messages.
func clip(s string, n int) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
