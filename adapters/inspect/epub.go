package inspect

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/entityenrich/enrich/domain/attachment"
)

// extractEPUB writes a book's chapters in reading order: the package
// document's spine, each XHTML chapter through the HTML text reader.
func extractEPUB(ctx context.Context, z *zipDoc, out *textOut) error {
	opf, err := epubRootfile(z)
	if err != nil {
		return err
	}
	chapters, err := epubSpine(z, opf)
	if err != nil {
		return err
	}
	for _, name := range chapters {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := out.Break(); err != nil {
			return err
		}
		rc, err := z.open(name)
		if err != nil {
			return err
		}
		err = htmlText(rc, out, true)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// epubRootfile is the package document META-INF/container.xml names.
func epubRootfile(z *zipDoc) (string, error) {
	var opf string
	err := z.walkPart("META-INF/container.xml", func(t xml.Token, _ string) error {
		if s, ok := t.(xml.StartElement); ok && s.Name.Local == "rootfile" && opf == "" {
			if mt := attr(s, "media-type"); mt == "" || mt == "application/oebps-package+xml" {
				opf = attr(s, "full-path")
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if opf == "" {
		return "", fmt.Errorf("%w: the book names no package document", attachment.ErrUnreadable)
	}
	return opf, nil
}

// epubSpine lists the chapter entries of the package document opf in
// spine order.
func epubSpine(z *zipDoc, opf string) ([]string, error) {
	type item struct{ href, mediaType string }
	items := map[string]item{}
	var spine []string
	err := z.walkPart(opf, func(t xml.Token, _ string) error {
		s, ok := t.(xml.StartElement)
		if !ok {
			return nil
		}
		switch s.Name.Local {
		case "item":
			items[attr(s, "id")] = item{attr(s, "href"), attr(s, "media-type")}
		case "itemref":
			spine = append(spine, attr(s, "idref"))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	dir := path.Dir(opf)
	var out []string
	for _, id := range spine {
		it, ok := items[id]
		if !ok || !strings.Contains(it.mediaType, "html") {
			continue
		}
		href, _, _ := strings.Cut(it.href, "#")
		if u, err := url.PathUnescape(href); err == nil {
			href = u
		}
		out = append(out, strings.TrimPrefix(path.Clean(path.Join(dir, href)), "/"))
	}
	if len(out) == 0 {
		return nil, errors.Join(attachment.ErrUnreadable, errors.New("the book's spine lists no chapter"))
	}
	return out, nil
}
