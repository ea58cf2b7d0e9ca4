package config_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/config"
)

var backticked = regexp.MustCompile("`([^`]*)`")

// docs/configuration.md names every variable Load reads, and where a row
// gives a default as a literal, it is the one Load uses: the table cannot
// drift from the struct.
func TestConfigurationDocMatchesDefaults(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	defaults := config.Defaults()
	if len(defaults) < 50 {
		t.Fatalf("only %d variables recorded", len(defaults))
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		// "`A` / `B`" with "`1` / `2`": the n-th default belongs to the
		// n-th variable; any other shape names variables only.
		vars := strings.Split(cells[1], " / ")
		defs := strings.Split(cells[2], " / ")
		for i, v := range vars {
			names := backticked.FindAllStringSubmatch(v, -1)
			for _, n := range names {
				documented[strings.SplitN(n[1], "=", 2)[0]] = true
			}
			if len(names) != 1 || len(vars) != len(defs) {
				continue
			}
			lit := backticked.FindStringSubmatch(defs[i])
			def, read := defaults[names[0][1]]
			if lit == nil || !read || !strings.HasPrefix(strings.TrimSpace(defs[i]), "`") {
				continue
			}
			if !sameDefault(lit[1], def) {
				t.Errorf("%s: documented default %q, Load's is %v", names[0][1], lit[1], def)
			}
		}
	}
	for name := range defaults {
		if !documented[name] {
			t.Errorf("%s is read by Load but not in docs/configuration.md", name)
		}
	}
}

func sameDefault(doc string, def any) bool {
	switch d := def.(type) {
	case string:
		return d == "" || doc == d
	case int:
		n, err := strconv.Atoi(doc)
		return err == nil && n == d
	case float64:
		f, err := strconv.ParseFloat(doc, 64)
		return err == nil && f == d
	case bool:
		b, err := strconv.ParseBool(doc)
		return err == nil && b == d
	case time.Duration:
		v, err := time.ParseDuration(doc)
		return err == nil && v == d
	}
	panic(fmt.Sprintf("a default of type %T", def))
}
