package api

import "testing"

// TestPagingStatesWhatWasAnswered: a paged list states the page asked for; a
// list of every row (is_pager=0) states page 1 with size = total, in both
// answer shapes.
func TestPagingStatesWhatWasAnswered(t *testing.T) {
	three, zero := 3, 0
	q := PageQuery{PageParam: &three}
	if err := q.Defaults(20, 100); err != nil {
		t.Fatal(err)
	}
	if got := q.pagination(95); got != (Pagination{IsPager: 1, Page: 3, Size: 20, Total: 95}) {
		t.Errorf("paged: %+v", got)
	}
	if q.Limit() != 20 || q.Offset() != 40 {
		t.Errorf("paged window: limit %d offset %d", q.Limit(), q.Offset())
	}
	all := PageQuery{PageParam: &three, IsPager: &zero}
	if err := all.Defaults(20, 100); err != nil {
		t.Fatal(err)
	}
	if got := all.pagination(95); got != (Pagination{IsPager: 0, Page: 1, Size: 95, Total: 95}) {
		t.Errorf("every row: %+v", got)
	}
	if page, size := all.reported(95); page != 1 || size != 95 {
		t.Errorf("every row, flat shape: page %d size %d", page, size)
	}
	if all.Offset() != 0 {
		t.Errorf("every row starts at offset %d", all.Offset())
	}
	big := 500
	if err := (&PageQuery{SizeParam: &big}).Defaults(20, 100); err == nil {
		t.Error("a size over the route's maximum was accepted")
	}
}
