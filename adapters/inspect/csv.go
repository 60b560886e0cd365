package inspect

import (
	"encoding/csv"
	"io"
	"strings"
)

// extractCSV writes a table a row per line, its fields separated by tabs
// whatever the file's delimiter, with line breaks inside fields turned
// into spaces so that a line stays a row.
func extractCSV(f io.ReaderAt, size int64, out *textOut) error {
	b, err := readAllBounded(f, size, 2*out.max+int64(len(bomUTF16LE)))
	if err != nil {
		return err
	}
	text := decodeText(b)
	delim := csvDelimiter([]byte(text[:min(len(text), sniffLen)]), len(text) > sniffLen)
	if delim == 0 {
		delim = ','
	}
	r := csv.NewReader(strings.NewReader(text))
	r.Comma, r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = delim, -1, true, true
	fix := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for i, field := range rec {
			rec[i] = fix.Replace(field)
		}
		if _, err := out.WriteString(strings.Join(rec, "\t") + "\n"); err != nil {
			return err
		}
	}
}
