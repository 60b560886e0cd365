package httpapi

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/text"
)

// conceptCSV is an import's CSV body: its texts, the line each starts on
// (for refusals) and the concept type its concept_type column names ("" when
// it names none).
type conceptCSV struct {
	Texts       []string
	Lines       []int
	ConceptType string
}

// The columns an import reads: text, or canonical_text (an export's), and
// concept_type; other columns are ignored.
const (
	csvText          = "text"
	csvCanonicalText = "canonical_text"
	csvConceptType   = "concept_type"
)

// parseConceptCSV reads an import's CSV: a header row, then at most
// maxRows data rows. A byte-order mark is skipped, \r\n and \n may mix,
// quoted fields may hold line breaks. Every cell is checked as text (no
// NUL, UTF-8 only) and a refusal names its line; the whole body is read
// before anything is resolved.
func parseConceptCSV(r io.Reader, maxRows int) (conceptCSV, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // a short row is named by its line below
	var out conceptCSV
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return out, app.Invalid("text", "the CSV is empty: it needs a header row naming a %q column", csvText)
		}
		return out, csvError(err)
	}
	textCol, typeCol, err := csvColumns(header)
	if err != nil {
		return out, err
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) <= textCol || typeCol >= len(rec) {
			return out, app.Invalid(lineField(line), "line %d has %d fields, fewer than the header's %d", line, len(rec), len(header))
		}
		line, _ = cr.FieldPos(textCol)
		if len(out.Texts) == maxRows {
			return out, app.Invalid("texts", "a CSV import takes at most %d data rows; line %d is one more", maxRows, line)
		}
		for i, cell := range rec {
			if reason, ok := text.CheckString(cell); !ok {
				l, _ := cr.FieldPos(i)
				return out, app.Invalid(lineField(l), "line %d holds %s, which is not accepted in text; nothing was imported", l, reason)
			}
		}
		if typeCol >= 0 {
			if err := out.takeType(strings.TrimSpace(rec[typeCol]), line); err != nil {
				return out, err
			}
		}
		out.Texts = append(out.Texts, rec[textCol])
		out.Lines = append(out.Lines, line)
	}
	if len(out.Texts) == 0 {
		return out, app.Invalid("texts", "the CSV has a header but no data rows")
	}
	return out, nil
}

// csvColumns finds the text column and the concept_type column (-1 when
// none) in the header, whose names are compared trimmed and case-blind.
func csvColumns(header []string) (textCol, typeCol int, err error) {
	textCol, canonCol, typeCol := -1, -1, -1
	names := make([]string, len(header))
	for i, h := range header {
		if reason, ok := text.CheckString(h); !ok {
			return 0, 0, app.Invalid(lineField(1), "the header (line 1) holds %s, which is not accepted in text", reason)
		}
		names[i] = strings.ToLower(strings.TrimSpace(h))
		switch names[i] {
		case csvText:
			textCol = i
		case csvCanonicalText:
			canonCol = i
		case csvConceptType:
			typeCol = i
		}
	}
	if textCol < 0 {
		textCol = canonCol
	}
	if textCol < 0 {
		return 0, 0, app.Invalid(csvText, "the CSV header (line 1) must name a %q column (optionally %q); it names %s",
			csvText, csvConceptType, strconv.Quote(strings.Join(names, ",")))
	}
	return textCol, typeCol, nil
}

// takeType keeps the file's one concept type: blank cells take it, a
// second value is refused.
func (c *conceptCSV) takeType(t string, line int) error {
	switch {
	case t == "" || t == c.ConceptType:
	case c.ConceptType == "":
		c.ConceptType = t
	default:
		return app.Invalid(lineField(line), "line %d names concept type %q, but the file's is %q: import one type per file", line, t, c.ConceptType)
	}
	return nil
}

func lineField(line int) string { return fmt.Sprintf("line %d", line) }

// csvError is a malformed CSV's refusal, naming its line; a body past the
// size limit is errTooLarge.
func csvError(err error) error {
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return errTooLarge
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return app.Invalid(lineField(pe.Line), "the CSV is malformed at line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return app.Invalid("", "the CSV could not be read: %v", err)
}

// exportHeader is the export's header row; embedding is added with
// include_embeddings.
var exportHeader = []string{"id", "concept_type", "canonical_text", "aliases", "ref_count", "embedding_model", "dims", "created_at"}

// exportRecord is one exported concept's row: aliases are the other
// aliases' texts as a JSON array (any text round-trips, separators
// included).
func exportRecord(row app.ConceptExportRow, embeddings bool) []string {
	c := row.Concept
	aliases := []string{}
	for _, a := range c.Aliases {
		if !a.IsCanonical {
			aliases = append(aliases, a.Text)
		}
	}
	rec := []string{c.ID, c.Type, c.CanonicalText, jsonText(aliases), strconv.Itoa(c.RefCount), c.EmbeddingModel,
		strconv.Itoa(c.Dims), c.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if embeddings {
		v := ""
		if len(row.Embedding) > 0 {
			v = vectorText(row.Embedding)
		}
		rec = append(rec, v)
	}
	return rec
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// vectorText writes a vector as a JSON array whose numbers read back to
// the same float32 values.
func vectorText(v []float32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}
