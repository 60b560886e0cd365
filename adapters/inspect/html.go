package inspect

import (
	"fmt"
	"io"
	"strings"

	"github.com/entityenrich/enrich/domain/attachment"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// skipTags hold no text a reader sees.
var skipTags = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true,
}

// blockTags start and end a line of their own.
var blockTags = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "caption": true, "dd": true,
	"details": true, "dialog": true, "div": true, "dl": true, "dt": true, "fieldset": true,
	"figcaption": true, "figure": true, "footer": true, "form": true, "h1": true, "h2": true,
	"h3": true, "h4": true, "h5": true, "h6": true, "header": true, "hr": true, "li": true,
	"main": true, "nav": true, "ol": true, "p": true, "pre": true, "section": true, "summary": true,
	"table": true, "title": true, "tr": true, "ul": true, "body": true,
}

// extractHTML writes a page's visible text, decoded from the charset its
// BOM or meta tag declares (UTF-8 when none does).
func extractHTML(f io.ReaderAt, size int64, out *textOut) error {
	head := make([]byte, min(size, 1024))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return err
	}
	_, name, _ := charset.DetermineEncoding(head, "text/html")
	r, err := charset.NewReaderLabel(name, io.NewSectionReader(f, 0, size))
	if err != nil {
		return err
	}
	return htmlText(r, out, false)
}

// htmlText streams HTML into text: script and style left out, a line per
// block element, table cells separated by tabs, whitespace collapsed as a
// browser would outside <pre>. skipHead leaves the <head> out too (a
// book's chapters repeat their heading as the page title).
func htmlText(r io.Reader, out *textOut, skipHead bool) error {
	z := html.NewTokenizer(r)
	// One token may not buffer more than the text may hold.
	z.SetMaxBuf(int(min(out.max, 1<<30)))
	skip, pre := 0, 0
	for {
		tt := z.Next()
		var err error
		switch tt {
		case html.ErrorToken:
			switch z.Err() {
			case io.EOF:
				return nil
			case html.ErrBufferExceeded:
				return fmt.Errorf("%w: a text run longer than %d bytes", attachment.ErrBomb, out.max)
			}
			return z.Err()
		case html.TextToken:
			if skip == 0 {
				err = writeHTMLText(out, string(z.Text()), pre > 0)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch {
			case (skipTags[tag] || skipHead && tag == "head") && tt == html.StartTagToken:
				skip++
			case tag == "br":
				_, err = out.WriteString("\n")
			case tag == "pre" && tt == html.StartTagToken:
				pre++
			}
			if blockTags[tag] {
				err = out.Newline()
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch {
			case skipTags[tag] || skipHead && tag == "head":
				skip = max(skip-1, 0)
			case tag == "pre":
				pre = max(pre-1, 0)
			case tag == "td" || tag == "th":
				_, err = out.WriteString("\t")
			}
			if blockTags[tag] {
				err = out.Newline()
			}
		}
		if err != nil {
			return err
		}
	}
}

// writeHTMLText writes a text node, its whitespace collapsed to single
// spaces (and dropped at the start of a line) unless it is preformatted.
func writeHTMLText(out *textOut, s string, pre bool) error {
	if !pre {
		atLineStart := out.b.Len() == 0 || strings.HasSuffix(out.b.String(), "\n") || strings.HasSuffix(out.b.String(), " ")
		// HTML collapses ASCII whitespace only: a no-break space stays.
		fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' })
		if len(fields) == 0 {
			if atLineStart || s == "" {
				return nil
			}
			s = " "
		} else {
			lead := !atLineStart && s[0] != fields[0][0]
			trail := s[len(s)-1] != fields[len(fields)-1][len(fields[len(fields)-1])-1]
			s = strings.Join(fields, " ")
			if lead {
				s = " " + s
			}
			if trail {
				s += " "
			}
		}
	}
	_, err := out.WriteString(s)
	return err
}
