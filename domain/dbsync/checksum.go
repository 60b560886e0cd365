package dbsync

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/relmap"
)

// A registration's checksum (GET /api/databases/{id}/checksum) gives, per
// table of its linked schemas' shipped projections, the row count and a
// hash that a consumer computes over its replica with ChecksumSQL and
// compares.
//
// The hash covers each row's identity and revision: the row text is its
// primary key columns, then ee_revision on an entity table, each as
// PostgreSQL's text output, joined by U+001F; the table hash is the sum,
// as a decimal number, of the first 15 hex digits of each row text's MD5
// read as an integer. A sum does not depend on row order, so neither side
// sorts and the server adds rows as it reads them. A lost, duplicated or
// reordered delta shows: an entity at another revision, a row too many
// (a delete or a shrunk array not applied) or too few. Values other than
// keys are not hashed (the server holds entity payloads, not rows, and
// reproducing PostgreSQL's text of every type is brittle); comparing them
// is comparing the replica with a fresh snapshot.
//
// ChecksumSQL runs in a transaction with ChecksumSettings applied, so that
// dates, times and floats print as PGText renders them.

// ChecksumSettings are the session settings ChecksumSQL assumes (run them
// with SET LOCAL in the same transaction).
var ChecksumSettings = []string{"SET LOCAL TimeZone = 'UTC'", "SET LOCAL DateStyle = 'ISO, YMD'",
	"SET LOCAL extra_float_digits = 1", "SET LOCAL IntervalStyle = 'postgres'"}

// ChecksumColumns are the columns a table's row text is made of.
func ChecksumColumns(t relmap.Table) []string {
	cols := append([]string(nil), t.PrimaryKey...)
	if t.Kind == relmap.KindEntity {
		cols = append(cols, relmap.ColRevision)
	}
	return cols
}

// ChecksumSQL is the query a consumer runs over its replica's table t: one
// row (count bigint, hash text).
func ChecksumSQL(t relmap.Table) string {
	parts := make([]string, 0, len(t.PrimaryKey)+1)
	for _, c := range ChecksumColumns(t) {
		parts = append(parts, relmap.QuoteIdent(c)+"::text")
	}
	return fmt.Sprintf(`SELECT count(*)::bigint, coalesce(sum(('x' || substr(md5(r), 1, 15))::bit(60)::bigint), 0)::text `+
		`FROM (SELECT concat_ws(E'\x1f', %s) AS r FROM %s) AS s`, strings.Join(parts, ", "), relmap.QuoteIdent(t.Name))
}

// Checksum adds up the rows of a registration's tables.
type Checksum struct {
	counts map[string]int64
	sums   map[string]*big.Int
}

// NewChecksum returns an empty Checksum.
func NewChecksum() *Checksum {
	return &Checksum{counts: map[string]int64{}, sums: map[string]*big.Int{}}
}

// Tables lists m's tables, so that an empty one is reported too.
func (c *Checksum) Tables(m relmap.Map) {
	for _, t := range m.Tables {
		if _, ok := c.sums[t.Name]; !ok {
			c.counts[t.Name], c.sums[t.Name] = 0, new(big.Int)
		}
	}
}

// AddWrite adds the rows an entity's upsert puts into m's tables.
func (c *Checksum) AddWrite(m relmap.Map, w relmap.Write) error {
	c.Tables(m)
	for _, rs := range w.Payload.Tables {
		t := m.Table(rs.Table)
		if t == nil {
			return fmt.Errorf("checksum: the write names table %q, not in the map", rs.Table)
		}
		for _, row := range rs.Rows {
			text, err := RowText(*t, row)
			if err != nil {
				return err
			}
			c.AddRow(t.Name, text)
		}
	}
	return nil
}

// AddRow adds one row text (RowText) of table.
func (c *Checksum) AddRow(table, text string) {
	sum := md5.Sum([]byte(text))
	v, _ := new(big.Int).SetString(hex.EncodeToString(sum[:])[:15], 16)
	if c.sums[table] == nil {
		c.sums[table] = new(big.Int)
	}
	c.sums[table].Add(c.sums[table], v)
	c.counts[table]++
}

// Result returns the row count and the hash of every table.
func (c *Checksum) Result() (counts map[string]int64, hashes map[string]string) {
	counts, hashes = map[string]int64{}, map[string]string{}
	for name, s := range c.sums {
		counts[name], hashes[name] = c.counts[name], s.String()
	}
	return counts, hashes
}

// TableNames returns the names of c's tables, sorted.
func (c *Checksum) TableNames() []string {
	out := make([]string, 0, len(c.sums))
	for n := range c.sums {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// RowText is a row's text as ChecksumSQL builds it, from the row as a
// write's payload holds it (column -> decoded JSON value).
func RowText(t relmap.Table, row map[string]any) (string, error) {
	cols := ChecksumColumns(t)
	parts := make([]string, len(cols))
	for i, name := range cols {
		col := t.Column(name)
		if col == nil {
			return "", fmt.Errorf("checksum: table %s has no column %s", t.Name, name)
		}
		s, err := PGText(row[name], col.Type)
		if err != nil {
			return "", fmt.Errorf("checksum: %s.%s: %w", t.Name, name, err)
		}
		parts[i] = s
	}
	return strings.Join(parts, "\x1f"), nil
}

// PGText is PostgreSQL's text output (under ChecksumSettings) of a value
// as the column type typ stores it: the key types (text, varchar, char,
// uuid, integers, numeric, double precision, boolean, date, time,
// timestamptz).
func PGText(v any, typ string) (string, error) {
	if v == nil {
		return "", fmt.Errorf("a key column holds no value")
	}
	base, _, _ := strings.Cut(typ, "(")
	s := fmt.Sprint(v)
	switch base {
	case relmap.TypeText, "varchar", "character varying", relmap.TypeDate:
		return s, nil
	case "char", "character":
		return strings.TrimRight(s, " "), nil
	case relmap.TypeUUID:
		return strings.ToLower(s), nil
	case relmap.TypeBoolean:
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b), nil
		}
		return "", fmt.Errorf("%v is not a boolean", v)
	case relmap.TypeBigint, relmap.TypeInteger, "smallint":
		r, ok := new(big.Rat).SetString(s)
		if !ok || !r.IsInt() {
			return "", fmt.Errorf("%v is not a whole number", v)
		}
		return r.Num().String(), nil
	case relmap.TypeNumeric:
		return numericText(s)
	case relmap.TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "", err
		}
		return floatText(f), nil
	case relmap.TypeTimestamp:
		return timestampText(s)
	case "time":
		return timeText(s)
	}
	return "", fmt.Errorf("type %s is not a key type", typ)
}

// numericText is numeric's text: the input's digits at its scale (the
// fraction digits less the exponent, at least 0).
func numericText(s string) (string, error) {
	if _, err := strconv.ParseFloat(s, 64); err != nil && !strings.Contains(err.Error(), "range") {
		return "", fmt.Errorf("%q is not a number", s)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return "", fmt.Errorf("%q is not a number", s)
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	scale := len(frac) - exp
	if scale < 0 {
		digits += strings.Repeat("0", -scale)
		scale = 0
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	ip := strings.TrimLeft(digits[:len(digits)-scale], "0")
	if ip == "" {
		ip = "0"
	}
	out := ip
	if scale > 0 {
		out += "." + digits[len(digits)-scale:]
	}
	if neg && strings.Trim(digits, "0") != "" {
		out = "-" + out
	}
	return out, nil
}

// floatText is double precision's text with extra_float_digits = 1: the
// shortest exact digits, exponential below 1e-4 and from 1e15.
func floatText(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64)
	_, exp, _ := strings.Cut(e, "e")
	n, _ := strconv.Atoi(exp)
	if n < -4 || n >= 15 {
		return e
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func timestampText(s string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "", err
	}
	t = t.UTC().Round(1000)
	out := t.Format("2006-01-02 15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		out += strings.TrimRight(fmt.Sprintf(".%06d", us), "0")
	}
	return out + "+00", nil
}

func timeText(s string) (string, error) {
	hms, frac, _ := strings.Cut(s, ".")
	if i := strings.IndexAny(frac, "+-Z"); i >= 0 {
		frac = frac[:i]
	} else if i := strings.IndexAny(hms, "+-Z"); i >= 0 {
		hms = hms[:i]
	}
	if strings.Count(hms, ":") == 1 {
		hms += ":00"
	}
	if frac = strings.TrimRight(frac, "0"); frac != "" {
		hms += "." + frac
	}
	return hms, nil
}
