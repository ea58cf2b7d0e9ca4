package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// MinIO root credentials of every test server.
const (
	MinioUser     = "lore-test-admin"
	MinioPassword = "lore-test-secret-123"
)

// Minio is a running MinIO server on a temporary directory.
type Minio struct {
	Addr string // host:port
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// MinioBin is the server binary: $MINIO_BIN, <repo>/bin/minio, or minio on
// PATH.
func MinioBin() (string, error) {
	if p := os.Getenv("MINIO_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("MINIO_BIN=%s: %w", p, err)
		}
		return p, nil
	}
	if p := filepath.Join(RepoRoot(), "bin", "minio"); fileExists(p) {
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no MinIO binary found (checked $MINIO_BIN, <repo>/bin/minio and PATH): run `make tools`")
}

func fileExists(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() }

// StartMinio starts a MinIO server on a free loopback port and waits until
// it answers S3 calls. The kernel kills it if the test binary dies.
func StartMinio() (*Minio, error) {
	bin, err := MinioBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lore-minio-*")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	var logBuf bytes.Buffer
	cmd := exec.Command(bin, "server", "--quiet", "--address", addr, filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+MinioUser, "MINIO_ROOT_PASSWORD="+MinioPassword,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1")
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &Minio{Addr: addr, cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() { m.done <- cmd.Wait() }()
	if err := m.wait(90 * time.Second); err != nil {
		m.Stop()
		return nil, fmt.Errorf("MinIO did not start: %v\n%s", err, logBuf.String())
	}
	return m, nil
}

// Client is an admin client of the server.
func (m *Minio) Client() (*minio.Client, error) {
	return minio.New(m.Addr, &minio.Options{Creds: credentials.NewStaticV4(MinioUser, MinioPassword, "")})
}

func (m *Minio) wait(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	mc, err := m.Client()
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	lastErr := fmt.Errorf("not live within %v", timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-m.done:
			return fmt.Errorf("server exited: %v", err)
		default:
		}
		if resp, err := hc.Get("http://" + m.Addr + "/minio/health/live"); err == nil {
			resp.Body.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, lastErr = mc.ListBuckets(ctx)
			cancel()
			if lastErr == nil {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return lastErr
}

// Stop stops the server and removes its data.
func (m *Minio) Stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	_ = os.RemoveAll(m.dir)
}
