package env

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes where the benchmark ran.
type Machine struct {
	NProc    int
	CPUModel string
	MemTotal string
	Kernel   string
	GoBuild  string // Go version the benchmark was built with
	GoTool   string // `go version` on PATH, if any
	LoadAvg  string // /proc/loadavg at the start: other load skews figures
	Postgres string
	Date     string
	Commit   string // git HEAD and whether the tree had changes
}

// Describe gathers the machine facts (best effort: missing ones are "?").
func Describe(ctx context.Context, root string) Machine {
	m := Machine{NProc: runtime.NumCPU(), CPUModel: "?", MemTotal: "?", Kernel: "?", GoBuild: runtime.Version(),
		GoTool: "?", LoadAvg: "?", Postgres: "?", Commit: "?", Date: time.Now().Format("2006-01-02 15:04:05 MST")}
	if out, err := Run(ctx, "", "nproc"); err == nil {
		var n int
		if _, err := fmt.Sscan(out, &n); err == nil {
			m.NProc = n
		}
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == "MemTotal" {
				var kb float64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				m.MemTotal = fmt.Sprintf("%.1f GiB", kb/1024/1024)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if out, err := Run(ctx, "", "go", "version"); err == nil {
		m.GoTool = strings.TrimSpace(out)
	}
	if out, err := Run(ctx, root, "git", "rev-parse", "--short", "HEAD"); err == nil {
		m.Commit = strings.TrimSpace(out)
		if st, err := Run(ctx, root, "git", "status", "--porcelain"); err == nil && strings.TrimSpace(st) != "" {
			m.Commit += fmt.Sprintf(" + uncommitted changes (%d paths)", len(strings.Split(strings.TrimSpace(st), "\n")))
		}
	}
	return m
}

// LoadAvgNow reads /proc/loadavg (1, 5, 15 minutes).
func LoadAvgNow() string {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return "?"
}
