package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lorekb/lore/bench/internal/env"
)

// report collects the figures of every part and renders one Markdown text.
type report struct {
	o        *options
	machine  env.Machine
	sections []*section
	checks   []check
	elapsed  time.Duration
	failure  string
	loreEnv  string
	// suffix marks the sections and targets of a run on another Temporal
	// server (-temporal-pg).
	suffix string
}

// section is one part: free notes and a table of figures.
type section struct {
	title string
	notes []string
	head  []string
	rows  [][]string
}

// check is one target: the figure, the ceiling it is compared with, and the
// verdict.
type check struct {
	part    string
	target  string
	figure  string
	ceiling string
	ratio   string
	pass    bool
}

func newReport(o *options) *report { return &report{o: o} }

func (r *report) section(title string, head ...string) *section {
	s := &section{title: title + r.suffix, head: head}
	r.sections = append(r.sections, s)
	return s
}

func (s *section) row(cells ...string) { s.rows = append(s.rows, cells) }
func (s *section) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

func (r *report) check(c check) {
	c.target += r.suffix
	r.checks = append(r.checks, c)
	verdict := "MISS"
	if c.pass {
		verdict = "PASS"
	}
	logf("target %-55s %s  (%s; ceiling %s; ratio %s)", c.target, verdict, c.figure, orDash(c.ceiling), orDash(c.ratio))
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func table(b *strings.Builder, head []string, rows [][]string) {
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

func (r *report) render() string {
	var b strings.Builder
	m := r.machine
	b.WriteString("# Lore benchmark report\n\n")
	if r.o.quick {
		b.WriteString("> **Smoke run (-quick): tiny sizes, figures are not meaningful.**\n\n")
	}
	fmt.Fprintf(&b, "- Date: %s (whole run %s)\n", m.Date, r.elapsed.Round(time.Second))
	fmt.Fprintf(&b, "- Machine: %d CPU (nproc), %s, %s RAM, %s\n", m.NProc, m.CPUModel, m.MemTotal, m.Kernel)
	fmt.Fprintf(&b, "- Load average at start: %s; at end: %s (other work on the machine skews every figure)\n", m.LoadAvg, env.LoadAvgNow())
	fmt.Fprintf(&b, "- Go: %s (bench build); %s\n", m.GoBuild, m.GoTool)
	fmt.Fprintf(&b, "- Database: %s; lore commit %s\n", m.Postgres, m.Commit)
	fmt.Fprintf(&b, "- Command: `%s`\n", strings.Join(append([]string{"lorebench"}, os.Args[1:]...), " "))
	if r.loreEnv != "" {
		fmt.Fprintf(&b, "- lore serve (child process) environment: %s\n", r.loreEnv)
	}
	b.WriteString("\n")
	if r.failure != "" {
		fmt.Fprintf(&b, "**RUN FAILED:** %s\n\n", r.failure)
	}
	if len(r.checks) > 0 {
		b.WriteString("## Targets\n\n")
		rows := make([][]string, 0, len(r.checks))
		pass := 0
		for _, c := range r.checks {
			v := "**MISS**"
			if c.pass {
				v, pass = "PASS", pass+1
			}
			rows = append(rows, []string{c.part, c.target, c.figure, orDash(c.ceiling), orDash(c.ratio), v})
		}
		table(&b, []string{"Part", "Target", "Measured", "Ceiling (same run)", "Ratio", "Result"}, rows)
		fmt.Fprintf(&b, "\n%d of %d targets met.\n\n", pass, len(r.checks))
	}
	for _, s := range r.sections {
		fmt.Fprintf(&b, "## %s\n\n", s.title)
		if len(s.rows) > 0 {
			table(&b, s.head, s.rows)
			b.WriteString("\n")
		}
		for _, n := range s.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		if len(s.notes) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func pct(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*a/b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func rate(v float64, unit string) string { return fmt.Sprintf("%.0f %s", v, unit) }

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(io.LimitReader(r, 8<<20)).Decode(v) }
