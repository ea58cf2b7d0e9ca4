package e2e

import "github.com/uptrace/bun"

func bunIn(ids []int64) any { return bun.In(ids) }
