package inspect

import (
	"context"
	"io"
	"strings"

	"github.com/xuri/excelize/v2"
)

// extractXLSX writes a workbook sheet by sheet: a "## name" heading, then
// a line per non-empty row with its cells, as Excel displays them,
// separated by tabs. excelize is the maintained pure-Go reader of the
// format (shared strings, number formats, dates), which a hand-written
// XML walk would get wrong; the zip was checked against the bounds before
// it reads it, and its own unzip limits repeat them.
func (in Inspector) extractXLSX(ctx context.Context, f io.ReaderAt, size int64, out *textOut) error {
	x, err := excelize.OpenReader(io.NewSectionReader(f, 0, size), excelize.Options{
		UnzipSizeLimit:    in.MaxUnzipped,
		UnzipXMLSizeLimit: min(in.MaxUnzipped, 16<<20),
	})
	if err != nil {
		return err
	}
	defer x.Close()
	for _, sheet := range x.GetSheetList() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := out.Break(); err != nil {
			return err
		}
		if _, err := out.WriteString("## " + sheet + "\n"); err != nil {
			return err
		}
		if err := sheetText(x, sheet, out); err != nil {
			return err
		}
	}
	return nil
}

// sheetText writes one sheet's rows.
func sheetText(x *excelize.File, sheet string, out *textOut) error {
	rows, err := x.Rows(sheet)
	if err != nil {
		return err
	}
	defer rows.Close()
	fix := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")
	for rows.Next() {
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		for len(cols) > 0 && strings.TrimSpace(cols[len(cols)-1]) == "" {
			cols = cols[:len(cols)-1]
		}
		if len(cols) == 0 {
			continue
		}
		for i, c := range cols {
			cols[i] = fix.Replace(c)
		}
		if _, err := out.WriteString(strings.Join(cols, "\t") + "\n"); err != nil {
			return err
		}
	}
	return rows.Error()
}
