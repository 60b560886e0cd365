package inspect

import (
	"context"
	"encoding/xml"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/html/charset"
)

// walkXML streams an XML part token by token, handing fn each token with
// the local name of the element it sits in. encoding/xml expands no
// entities of a DTD, so a part cannot multiply itself while parsed.
func walkXML(r io.Reader, fn func(t xml.Token, parent string) error) error {
	d := xml.NewDecoder(r)
	d.CharsetReader = charset.NewReaderLabel
	var stack []string
	for {
		t, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		parent := ""
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		if err := fn(t, parent); err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name.Local)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
}

// walkPart opens a zip entry and walks it.
func (z *zipDoc) walkPart(name string, fn func(t xml.Token, parent string) error) error {
	rc, err := z.open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	return walkXML(rc, fn)
}

// extractDOCX writes the body of a Word document: the text runs (w:t),
// tabs and breaks inside runs, one line per paragraph. Deleted text
// (w:delText) and field codes (w:instrText) are not text a reader sees.
func extractDOCX(z *zipDoc, out *textOut) error {
	return z.walkPart("word/document.xml", func(t xml.Token, parent string) error {
		var err error
		switch t := t.(type) {
		case xml.CharData:
			if parent == "t" {
				_, err = out.Write(t)
			}
		case xml.StartElement:
			switch {
			case parent == "r" && t.Name.Local == "tab":
				_, err = out.WriteString("\t")
			case parent == "r" && (t.Name.Local == "br" || t.Name.Local == "cr"):
				_, err = out.WriteString("\n")
			}
		case xml.EndElement:
			if t.Name.Local == "p" {
				err = out.Newline()
			}
		}
		return err
	})
}

// drawingText writes DrawingML text (slides): a:t runs, a:br breaks, a
// line per a:p paragraph.
func drawingText(out *textOut) func(t xml.Token, parent string) error {
	return func(t xml.Token, parent string) error {
		var err error
		switch t := t.(type) {
		case xml.CharData:
			if parent == "t" {
				_, err = out.Write(t)
			}
		case xml.StartElement:
			if t.Name.Local == "br" {
				_, err = out.WriteString("\n")
			}
		case xml.EndElement:
			if t.Name.Local == "p" {
				err = out.Newline()
			}
		}
		return err
	}
}

// extractPPTX writes each slide's text under a "## Slide N" heading, in
// the deck's order.
func extractPPTX(ctx context.Context, z *zipDoc, out *textOut) error {
	for i, name := range slideOrder(z) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := out.Break(); err != nil {
			return err
		}
		if _, err := out.WriteString("## Slide " + strconv.Itoa(i+1) + "\n"); err != nil {
			return err
		}
		if err := z.walkPart(name, drawingText(out)); err != nil {
			return err
		}
	}
	return nil
}

var slideName = regexp.MustCompile(`^ppt/slides/slide(\d+)\.xml$`)

// slideOrder lists the slide parts in the deck's order: the slide id list
// of ppt/presentation.xml through its relationships, or, when those
// cannot be read, the slide files by number.
func slideOrder(z *zipDoc) []string {
	if names := slidesByRels(z); len(names) > 0 {
		return names
	}
	var names []string
	for _, f := range z.r.File {
		if slideName.MatchString(f.Name) {
			names = append(names, f.Name)
		}
	}
	num := func(s string) int { n, _ := strconv.Atoi(slideName.FindStringSubmatch(s)[1]); return n }
	sort.Slice(names, func(i, j int) bool { return num(names[i]) < num(names[j]) })
	return names
}

// slidesByRels reads the slide order of ppt/presentation.xml (nil when
// anything is missing).
func slidesByRels(z *zipDoc) []string {
	targets := map[string]string{}
	err := z.walkPart("ppt/_rels/presentation.xml.rels", func(t xml.Token, _ string) error {
		if s, ok := t.(xml.StartElement); ok && s.Name.Local == "Relationship" {
			targets[attr(s, "Id")] = attr(s, "Target")
		}
		return nil
	})
	if err != nil {
		return nil
	}
	var names []string
	err = z.walkPart("ppt/presentation.xml", func(t xml.Token, _ string) error {
		if s, ok := t.(xml.StartElement); ok && s.Name.Local == "sldId" {
			target := targets[relID(s)]
			if target == "" {
				return nil
			}
			name := strings.TrimPrefix(path.Clean(path.Join("ppt", target)), "/")
			if strings.HasPrefix(target, "/") {
				name = strings.TrimPrefix(path.Clean(target), "/")
			}
			if z.file(name) != nil {
				names = append(names, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return names
}

// attr is the value of the attribute with local name local ("" if none).
func attr(s xml.StartElement, local string) string {
	for _, a := range s.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// relID is a slide id's relationship (r:id): the element also carries a
// plain numeric "id", which is not it.
func relID(s xml.StartElement) string {
	for _, a := range s.Attr {
		if a.Name.Local == "id" && a.Name.Space != "" {
			return a.Value
		}
	}
	return ""
}

// extractODT writes an OpenDocument text: a line per paragraph or
// heading, with its spaces (text:s), tabs and line breaks. Text outside
// paragraphs (tracked deletions, metadata) is left out.
func extractODT(z *zipDoc, out *textOut) error {
	depth := 0 // open text:p / text:h elements
	return z.walkPart("content.xml", func(t xml.Token, _ string) error {
		var err error
		switch t := t.(type) {
		case xml.CharData:
			if depth > 0 {
				_, err = out.Write(t)
			}
		case xml.StartElement:
			switch t.Name.Local {
			case "p", "h":
				depth++
			case "s", "tab", "line-break":
				if depth > 0 {
					err = odtSpace(t, out)
				}
			}
		case xml.EndElement:
			if t.Name.Local == "p" || t.Name.Local == "h" {
				depth = max(depth-1, 0)
				err = out.Newline()
			}
		}
		return err
	})
}

// odtSpace writes the whitespace elements of an ODF paragraph.
func odtSpace(t xml.StartElement, out *textOut) error {
	var err error
	switch t.Name.Local {
	case "s":
		n, _ := strconv.Atoi(attr(t, "c"))
		_, err = out.WriteString(strings.Repeat(" ", min(max(n, 1), 1024)))
	case "tab":
		_, err = out.WriteString("\t")
	case "line-break":
		_, err = out.WriteString("\n")
	}
	return err
}
