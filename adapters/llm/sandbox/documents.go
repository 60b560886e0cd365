package sandbox

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig reads GIF
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
	_ "golang.org/x/image/webp" // and WebP, which the default policies accept

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/sample"
)

// Document is one attachment as a sandbox model reads it: a PDF's text
// layer, an image's format and dimensions, or the text a prompt inlined.
// Facts are its "key: value" lines, in order: what the sandbox grounds its
// answers on.
type Document struct {
	Filename, MediaType, Text string
	Facts                     []Fact
}

// Fact is one "key: value" line of a document.
type Fact struct{ Key, Value string }

// PDFTextFunc reads the text layer of a PDF's bytes.
type PDFTextFunc func(data []byte) (string, error)

// documents reads the attachments of a conversation: the text blocks of
// its prompt, and its binary parts (paired in order with the prompt's
// "attached as a file" mentions, which name them).
func documents(messages []llms.MessageContent, prompt string, pdfText PDFTextFunc) []Document {
	var bins []llms.BinaryContent
	for _, mc := range messages {
		for _, p := range mc.Parts {
			if b, ok := p.(llms.BinaryContent); ok {
				bins = append(bins, b)
			}
		}
	}
	var out []Document
	next := 0
	for _, b := range attachment.ParseBlocks(prompt) {
		d := Document{Filename: b.Filename, MediaType: b.MediaType, Text: b.Text}
		if b.File {
			if next >= len(bins) {
				continue
			}
			d.MediaType, d.Text = bins[next].MIMEType, readBinary(bins[next], pdfText)
			next++
		}
		d.Facts = facts(d.Text)
		out = append(out, d)
	}
	for ; next < len(bins); next++ { // files the prompt does not mention
		text := readBinary(bins[next], pdfText)
		out = append(out, Document{MediaType: bins[next].MIMEType, Text: text, Facts: facts(text)})
	}
	return out
}

// readBinary is what the sandbox sees in a file: a PDF's text layer, an
// image's format and dimensions as facts, nothing for anything else.
func readBinary(b llms.BinaryContent, pdfText PDFTextFunc) string {
	switch {
	case b.MIMEType == "application/pdf":
		if pdfText == nil {
			pdfText = PDFText
		}
		text, _ := pdfText(b.Data)
		return text
	case strings.HasPrefix(b.MIMEType, "image/"):
		cfg, format, err := image.DecodeConfig(bytes.NewReader(b.Data))
		if err != nil {
			return ""
		}
		return fmt.Sprintf("image_format: %s\nimage_width: %d\nimage_height: %d\nimage_dimensions: %dx%d\n",
			format, cfg.Width, cfg.Height, cfg.Width, cfg.Height)
	}
	return ""
}

var factLine = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9 _.\-]{0,60}?)\s*:\s*(\S.*?)\s*$`)

func facts(text string) []Fact {
	var out []Fact
	for _, line := range strings.Split(text, "\n") {
		if m := factLine.FindStringSubmatch(line); m != nil {
			out = append(out, Fact{Key: m[1], Value: m[2]})
		}
	}
	return out
}

// fact is the first value of docs for a key that normalizes like key.
func fact(docs []Document, key string) (string, bool) {
	nk := normalize(key)
	for _, d := range docs {
		for _, f := range d.Facts {
			if normalize(f.Key) == nk {
				return f.Value, true
			}
		}
	}
	return "", false
}

// factValue is v as JSON: an integer or a number when it reads as one.
func factValue(v string) any {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f
	}
	return v
}

// ground fills the top-level properties of answer whose names a
// document's facts give, where the fact's value fits the property's
// schema: the answer then shows it read the documents.
func ground(schema map[string]any, answer any, docs []Document) any {
	obj, ok := answer.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if !ok || props == nil || len(docs) == 0 {
		return answer
	}
	g := newGen(schema, nil, "ground")
	for _, k := range sortedKeys(props) {
		v, ok := fact(docs, k)
		if !ok {
			continue
		}
		ps, _ := props[k].(map[string]any)
		for _, c := range []any{factValue(v), v} {
			if n, isInt := c.(int64); isInt {
				c = float64(n)
			}
			if ps == nil || g.admits(ps, c) {
				obj[k] = c
				break
			}
		}
	}
	return obj
}

// PDFText is the sandbox's own reader of a PDF's text layer, used unless
// the wiring gives the models another (WithPDFText): the literal strings
// its content streams show (Tj, TJ, ' and "), a line per text line, in
// streams stored plain or Flate-compressed. Enough for the simple PDFs of
// tests and demos; not a general PDF reader.
func PDFText(data []byte) (string, error) {
	var sb strings.Builder
	rest := data
	for {
		i := bytes.Index(rest, []byte("stream"))
		if i < 0 {
			break
		}
		dict := rest[:i]
		body := rest[i+len("stream"):]
		body = bytes.TrimLeft(body, "\r\n")
		j := bytes.Index(body, []byte("endstream"))
		if j < 0 {
			break
		}
		content := body[:j]
		rest = body[j+len("endstream"):]
		if k := bytes.LastIndex(dict, []byte("<<")); k >= 0 && bytes.Contains(dict[k:], []byte("/FlateDecode")) {
			zr, err := zlib.NewReader(bytes.NewReader(content))
			if err != nil {
				continue
			}
			content, err = io.ReadAll(io.LimitReader(zr, 16<<20))
			if err != nil && len(content) == 0 {
				continue
			}
		}
		showText(&sb, content)
	}
	return sb.String(), nil
}

// showText appends the text that content's operators show.
func showText(sb *strings.Builder, content []byte) {
	var line strings.Builder
	flush := func() {
		if line.Len() > 0 {
			sb.WriteString(line.String())
			sb.WriteByte('\n')
			line.Reset()
		}
	}
	for i := 0; i < len(content); i++ {
		switch c := content[i]; {
		case c == '(':
			s, n := literal(content[i:])
			line.WriteString(s)
			i += n - 1
		case c == 'T' && i+1 < len(content) && (content[i+1] == '*' || content[i+1] == 'd' || content[i+1] == 'D'):
			flush()
		case c == 'E' && i+1 < len(content) && content[i+1] == 'T':
			flush()
		}
	}
	flush()
}

// literal reads a PDF literal string at b[0] == '(' and returns it and the
// bytes it took.
func literal(b []byte) (string, int) {
	var sb strings.Builder
	depth := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\\' && i+1 < len(b):
			i++
			switch e := b[i]; e {
			case 'n':
				sb.WriteByte('\n')
			case 'r', 't':
				sb.WriteByte(' ')
			default:
				sb.WriteByte(e)
			}
		case c == '(':
			if depth > 0 {
				sb.WriteByte(c)
			}
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return sb.String(), i + 1
			}
			sb.WriteByte(c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String(), len(b)
}

// factKeys are the keys of the documents' facts, snake_case, each once, in
// order.
func factKeys(docs []Document) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range docs {
		for _, f := range d.Facts {
			k := sample.ConventionSnake.Apply(f.Key)
			if k == "" || seen[normalize(k)] {
				continue
			}
			seen[normalize(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// addDocumentProperties adds to a schema's properties one per document
// fact it lacks, typed by the fact's value, and returns their names.
func addDocumentProperties(doc map[string]any, docs []Document) []string {
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		doc["properties"] = props
	}
	have := map[string]bool{}
	for k := range props {
		have[normalize(k)] = true
	}
	var added []string
	for _, k := range factKeys(docs) {
		if have[normalize(k)] {
			continue
		}
		v, _ := fact(docs, k)
		p := map[string]any{"type": "string", "description": fmt.Sprintf("The %s, as the attached documents give it.", humanWords(k))}
		switch factValue(v).(type) {
		case int64:
			p["type"] = "integer"
		case float64:
			p["type"] = "number"
		}
		props[k] = p
		added = append(added, k)
	}
	return added
}
