package main

import (
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
