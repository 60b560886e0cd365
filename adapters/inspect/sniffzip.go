package inspect

import (
	"compress/flate"
	"encoding/binary"
	"io"
	"mime"
	"strings"
)

// The local file header, read to take an ODF or EPUB "mimetype" entry.
const (
	sigLocal = 0x04034b50
	lenLocal = 30
)

// zipByExt are the zip-based documents a filename may name.
var zipByExt = map[string]string{
	".docx": TypeDOCX, ".xlsx": TypeXLSX, ".pptx": TypePPTX, ".odt": TypeODT, ".epub": TypeEPUB,
}

// sniffZip tells zip-based documents apart by what they hold: OOXML by
// its [Content_Types].xml and part folders, ODF and EPUB by their
// "mimetype" entry. A zip whose directory cannot be read is named by its
// extension when that names a zip document, so extraction answers
// ErrUnreadable (a clear refusal) rather than the type being unknown.
func (in Inspector) sniffZip(f io.ReaderAt, size int64, ext string) (string, error) {
	entries, _, err := scanDir(f, size, in.MaxEntries)
	if err != nil || len(entries) == 0 {
		if mt, ok := zipByExt[ext]; ok {
			return mt, nil
		}
		return TypeZip, nil
	}
	var contentTypes, container bool
	var word, xl, ppt bool
	var mimetype *zipEntry
	for i, e := range entries {
		switch {
		case e.name == "[Content_Types].xml":
			contentTypes = true
		case e.name == "mimetype":
			mimetype = &entries[i]
		case e.name == "META-INF/container.xml":
			container = true
		case strings.HasPrefix(e.name, "word/"):
			word = true
		case strings.HasPrefix(e.name, "xl/"):
			xl = true
		case strings.HasPrefix(e.name, "ppt/"):
			ppt = true
		}
	}
	switch {
	case contentTypes && word:
		return TypeDOCX, nil
	case contentTypes && xl:
		return TypeXLSX, nil
	case contentTypes && ppt:
		return TypePPTX, nil
	case mimetype != nil:
		if mt := readMimetype(f, size, *mimetype); mt != "" {
			return mt, nil
		}
	}
	if container {
		return TypeEPUB, nil
	}
	return TypeZip, nil
}

// readMimetype returns the media type an ODF or EPUB "mimetype" entry
// holds ("" when it holds none). It reads at most a line's worth of bytes.
func readMimetype(f io.ReaderAt, size int64, e zipEntry) string {
	var h [lenLocal]byte
	off := int64(e.localHeaderOffset)
	if off < 0 || off > size-lenLocal {
		return ""
	}
	if _, err := f.ReadAt(h[:], off); err != nil || binary.LittleEndian.Uint32(h[:]) != sigLocal {
		return ""
	}
	data := off + lenLocal + int64(binary.LittleEndian.Uint16(h[26:])) + int64(binary.LittleEndian.Uint16(h[28:]))
	if data > size {
		return ""
	}
	n := size - data
	if c := int64(e.compressed); c >= 0 && c < n {
		n = c
	}
	var r io.Reader = io.NewSectionReader(f, data, n)
	switch e.method {
	case 0:
	case 8:
		r = flate.NewReader(r)
	default:
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(r, 128))
	s := strings.TrimSpace(string(b))
	if mt, params, err := mime.ParseMediaType(s); err == nil && len(params) == 0 && strings.Contains(mt, "/") {
		return mt
	}
	return ""
}
