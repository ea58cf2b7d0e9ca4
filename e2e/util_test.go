package e2e

import (
	"strconv"
	"strings"

	"github.com/uptrace/bun"
)

func bunIn(ids []int64) any { return bun.List(ids) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
