package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTick = 100

// treeCPU returns the CPU time (user + system) used so far by pid and every
// process below it (the Temporal server runs under its start script).
func treeCPU(pid int) time.Duration {
	var total time.Duration
	seen := map[int]bool{}
	var walk func(int)
	walk = func(p int) {
		if seen[p] {
			return
		}
		seen[p] = true
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); err == nil {
			// Fields after the command name, which may hold spaces.
			if i := strings.LastIndexByte(string(data), ')'); i > 0 {
				f := strings.Fields(string(data[i+2:]))
				if len(f) > 12 {
					u, _ := strconv.ParseInt(f[11], 10, 64)
					s, _ := strconv.ParseInt(f[12], 10, 64)
					total += time.Duration(u+s) * time.Second / clockTick
				}
			}
		}
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, t := range tasks {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			if err != nil {
				continue
			}
			for _, c := range strings.Fields(string(data)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n)
				}
			}
		}
	}
	walk(pid)
	return total
}

// selfCPU returns the CPU time (user + system) used so far by this process
// alone (the load generator and the scripted model), not its children.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dbBackendsCPU returns, by pid, the CPU time used so far by the PostgreSQL
// backends connected to the bench's scratch database (lore's connections),
// read from /proc: the server must run on this machine (nil otherwise).
func (b *bench) dbBackendsCPU(ctx context.Context) map[int]time.Duration {
	rows, err := b.pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return nil
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			return nil // not on this machine
		}
		out[pid] = treeCPU(pid)
	}
	if rows.Err() != nil {
		return nil
	}
	return out
}

// cpuSince is the CPU the backends in after used since before (a backend
// that connected in between counts whole; one that left is lost). ok is
// false when either reading failed.
func cpuSince(before, after map[int]time.Duration) (time.Duration, bool) {
	if before == nil || after == nil {
		return 0, false
	}
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d, true
}

// procStatus returns a field of /proc/<pid>/status (e.g. VmHWM, VmRSS).
func procStatus(pid int, field string) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field+":") {
			return strings.TrimSpace(strings.TrimPrefix(line, field+":"))
		}
	}
	return "?"
}

// machineCPU is the whole machine's CPU time so far from /proc/stat's first
// line, summed over its cores: busy (every state but idle and iowait), idle,
// and iowait (idle while a disk request was pending).
type machineCPU struct{ busy, idle, iowait time.Duration }

func readMachineCPU() machineCPU {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return machineCPU{}
	}
	var m machineCPU
	for i, s := range f[1:] {
		if i >= 8 { // guest times are already counted in user and nice
			break
		}
		n, _ := strconv.ParseInt(s, 10, 64)
		d := time.Duration(n) * time.Second / clockTick
		switch i {
		case 3:
			m.idle = d
		case 4:
			m.iowait = d
		default:
			m.busy += d
		}
	}
	return m
}

func (m machineCPU) sub(o machineCPU) machineCPU {
	return machineCPU{m.busy - o.busy, m.idle - o.idle, m.iowait - o.iowait}
}

// settle waits until the machine is quiet, at most max: until its cores were
// idle at least 90% of a 500 ms window (what an earlier part left running,
// such as PostgreSQL's autovacuum after a vectorization, would otherwise
// fall on the next measurement). It returns how long it waited and whether
// the machine got quiet.
func settle(ctx context.Context, max time.Duration) (time.Duration, bool) {
	t0 := time.Now()
	for time.Since(t0) < max && ctx.Err() == nil {
		a := readMachineCPU()
		time.Sleep(500 * time.Millisecond)
		d := readMachineCPU().sub(a)
		if total := d.busy + d.idle + d.iowait; total > 0 && d.idle+d.iowait >= total*9/10 {
			return time.Since(t0), true
		}
	}
	return time.Since(t0), false
}
