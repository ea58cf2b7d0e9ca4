// Package sheet converts spreadsheets (.xlsx through excelize, .csv through
// encoding/csv) to Markdown: one section per sheet, each sheet's used range
// as a Markdown table whose first row is the header.
package sheet

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/convert"
	"github.com/xuri/excelize/v2"
)

// MaxRows and MaxCols bound one table; the rest of a larger sheet is cut
// with a note, so a sheet of a million rows does not become one document of
// hundreds of megabytes.
const (
	MaxRows = 5000
	MaxCols = 100
)

// Converter reads .xlsx and .csv files.
type Converter struct{}

// Name implements convert.Converter.
func (Converter) Name() string { return "sheet" }

// Formats implements convert.Converter.
func (Converter) Formats() []string { return []string{"xlsx", "csv"} }

// Convert implements convert.Converter.
func (Converter) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	if in.Ext() == "csv" {
		return convertCSV(ctx, in)
	}
	z, err := convert.OpenZip(in.Data, in.Limits) // encrypted, non-zip and bomb checks
	if err != nil {
		return nil, err
	}
	if !z.Has("xl/workbook.xml") {
		return nil, fmt.Errorf("%w: no xl/workbook.xml: not an Excel workbook", convert.ErrCorrupt)
	}
	lim := in.Limits.Or()
	f, err := excelize.OpenReader(bytes.NewReader(in.Data), excelize.Options{
		UnzipSizeLimit: lim.MaxUnpacked, UnzipXMLSizeLimit: min(lim.MaxUnpacked, 64<<20)})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", convert.ErrCorrupt, err)
	}
	defer f.Close()
	var b strings.Builder
	sheets := f.GetSheetList()
	for _, name := range sheets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows, cut, err := readSheet(ctx, f, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: sheet %s: %v", convert.ErrCorrupt, name, err)
		}
		if len(rows) == 0 {
			continue
		}
		b.WriteString("## " + convert.EscapeText(name) + "\n\n" + convert.Table(escape(rows)) + "\n")
		if cut {
			fmt.Fprintf(&b, "*(only the first %d rows and %d columns are shown)*\n\n", MaxRows, MaxCols)
		}
	}
	props, _ := f.GetDocProps()
	t := ""
	if props != nil {
		t = props.Title
	}
	return &convert.Result{Markdown: b.String(), Title: t, Meta: map[string]any{"format": "xlsx", "sheets": len(sheets)}}, nil
}

// escape makes cell values literal Markdown text.
func escape(rows [][]string) [][]string {
	for _, r := range rows {
		for i, c := range r {
			r[i] = convert.EscapeText(c)
		}
	}
	return rows
}

// readSheet streams a sheet's rows, trimming empty trailing rows and columns.
func readSheet(ctx context.Context, f *excelize.File, name string) ([][]string, bool, error) {
	it, err := f.Rows(name)
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	var rows [][]string
	cut := false
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		if len(rows) >= MaxRows {
			cut = true
			break
		}
		cols, err := it.Columns()
		if err != nil {
			return nil, false, err
		}
		if len(cols) > MaxCols {
			cols, cut = cols[:MaxCols], true
		}
		rows = append(rows, cols)
	}
	return trim(rows), cut, it.Error()
}

// trim drops trailing empty rows and columns no row uses.
func trim(rows [][]string) [][]string {
	for len(rows) > 0 && empty(rows[len(rows)-1]) {
		rows = rows[:len(rows)-1]
	}
	width := 0
	for _, r := range rows {
		for i := len(r) - 1; i >= 0; i-- {
			if strings.TrimSpace(r[i]) != "" {
				width = max(width, i+1)
				break
			}
		}
	}
	for i, r := range rows {
		if len(r) > width {
			rows[i] = r[:width]
		}
	}
	return rows
}

func empty(r []string) bool {
	for _, c := range r {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

func convertCSV(ctx context.Context, in convert.Input) (*convert.Result, error) {
	data := bytes.TrimPrefix(in.Data, []byte("\ufeff"))
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: %s is not UTF-8 text", convert.ErrCorrupt, in.Name)
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	if first, _, _ := bytes.Cut(data, []byte("\n")); bytes.Count(first, []byte(";")) > bytes.Count(first, []byte(",")) {
		r.Comma = ';'
	} else if bytes.Count(first, []byte("\t")) > bytes.Count(first, []byte(",")) {
		r.Comma = '\t'
	}
	var rows [][]string
	cut := false
	for n := 0; ; n++ {
		if n&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", convert.ErrCorrupt, err)
		}
		if len(rows) >= MaxRows {
			cut = true
			break
		}
		if len(rec) > MaxCols {
			rec, cut = rec[:MaxCols], true
		}
		rows = append(rows, rec)
	}
	md := convert.Table(escape(trim(rows)))
	if cut {
		md += fmt.Sprintf("\n*(only the first %d rows and %d columns are shown)*\n", MaxRows, MaxCols)
	}
	return &convert.Result{Markdown: md, Meta: map[string]any{"format": "csv", "rows": len(rows)}}, nil
}
