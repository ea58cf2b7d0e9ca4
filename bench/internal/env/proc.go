// Package env starts and stops what the benchmark runs against: child
// processes (the Temporal dev server, lore serve), a scratch PostgreSQL
// database, free ports, and describes the machine.
package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortFree reports whether 127.0.0.1:port can be listened on now.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Proc is a child process in its own process group, killed with the
// benchmark (Pdeathsig) should the benchmark itself die.
type Proc struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	once    sync.Once
}

// Start runs path with args and env (nil: inherit), output to a log file in
// logDir.
func Start(name, logDir, path string, args, environ []string) (*Proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, waits up to grace, then kills
// the group. Safe to call more than once.
func (p *Proc) Stop(grace time.Duration) {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
			}
		}
		// Leftover members of the group (none expected) go too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// Tail returns the last n lines of the process log.
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitTCP waits until addr accepts connections, the process exits, or the
// timeout passes.
func (p *Proc) WaitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	return p.WaitFor(ctx, timeout, "port "+addr, func(ctx context.Context) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// WaitFor polls check until it returns nil, the process exits, ctx ends or
// the timeout passes; errors name the process and quote its log.
func (p *Proc) WaitFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if ended, err := p.Exited(); ended {
			return fmt.Errorf("%s exited (%v) before %s was ready; last log lines:\n%s", p.Name, err, what, p.Tail(30))
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		last = check(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not ready after %s (last error: %v); last log lines:\n%s", p.Name, what, timeout, last, p.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// FilteredEnviron is os.Environ without the variables lore reads, so a
// developer's own settings never leak into the measured process.
func FilteredEnviron() []string {
	prefixes := []string{"LORE_", "DATABASE_URL=", "TEMPORAL_", "CHAT_", "EMBED_", "RERANK_", "RAG_", "AGENT_",
		"MILVUS_", "S3_", "REDIS_URL=", "MESSENGER_"}
	var out []string
next:
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// Run runs a short command and returns its combined output.
func Run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return buf.String(), fmt.Errorf("%s %s: exit %d: %s", name, strings.Join(args, " "), ee.ExitCode(), strings.TrimSpace(lastLines(buf.String(), 5)))
		}
		return buf.String(), fmt.Errorf("%s: %w", name, err)
	}
	return buf.String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Itoa is strconv.Itoa, for building argument lists.
func Itoa(n int) string { return strconv.Itoa(n) }
