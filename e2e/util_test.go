package e2e

import (
	"strconv"

	"github.com/uptrace/bun"
)

func bunIn(ids []int64) any { return bun.In(ids) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
