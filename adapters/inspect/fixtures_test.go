package inspect_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/xuri/excelize/v2"
)

// update rewrites the committed fixtures under testdata (and the copies
// the e2e tests and the README use under test/testdata):
//
//	go test ./adapters/inspect -run TestFixtures -update
var update = flag.Bool("update", false, "rewrite the testdata fixtures")

// sharedFixtures are copied to test/testdata for the e2e tests and the
// README walk-through.
var sharedFixtures = []string{"acme-annual-report.pdf", "acme-logo.png", "acme-photo.jpg"}

// fixtures builds every fixture file, by name.
func fixtures(t *testing.T) map[string][]byte {
	t.Helper()
	return map[string][]byte{
		"acme-annual-report.pdf": acmePDF(),
		"acme-logo.png":          pngImage(t, 64, 48),
		"acme-photo.jpg":         jpegImage(t, 64, 48),
		"acme-anim.gif":          gifImage(t, 16, 8),
		"acme-pixel.webp":        webpPixel(t),
		"notes.txt":              []byte("Acme Robotics GmbH\nMunich office notes: 240 employees.\n"),
		"notes.md":               []byte("# Acme Robotics\n\n* founded 2011\n* Munich\n"),
		"page.html":              []byte(acmeHTML),
		"table.csv":              []byte("company;city;employees\nAcme Robotics GmbH;Munich;240\n\"Acme; Services\";Berlin;12\n"),
		"letter.rtf":             []byte(acmeRTF),
		"report.docx":            docx(t),
		"deck.pptx":              pptx(t),
		"memo.odt":               odt(t),
		"book.epub":              epub(t),
		"figures.xlsx":           xlsx(t),
		"legacy.doc":             append([]byte("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"), make([]byte, 504)...),
	}
}

// TestFixtures checks that every fixture is committed, and with -update
// writes them.
func TestFixtures(t *testing.T) {
	is := is.New(t)
	for name, b := range fixtures(t) {
		p := filepath.Join("testdata", name)
		if *update {
			is.NoErr(os.WriteFile(p, b, 0o644))
			for _, s := range sharedFixtures {
				if s == name {
					is.NoErr(os.WriteFile(filepath.Join("..", "..", "test", "testdata", name), b, 0o644))
				}
			}
		}
		_, err := os.Stat(p)
		is.NoErr(err) // run with -update to write the fixture
	}
}

// zipFile is one entry of a zip built in a test.
type zipFile struct {
	name, body string
	store      bool
}

// buildZip writes entries in order, with a fixed time so fixtures do not
// change from run to run.
func buildZip(t *testing.T, entries ...zipFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)}
		if e.store {
			h.Method = zip.Store
		}
		f, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// acmePDF is a two-page PDF with a real text layer (Helvetica, WinAnsi),
// written object by object so the xref offsets are exact.
func acmePDF() []byte {
	page1 := pdfText(18, 770, "Acme Robotics GmbH - Annual Report 2024") + pdfText(11, 730,
		"Acme Robotics GmbH was founded in 2011 in Munich, Germany.",
		"The company builds autonomous warehouse robots and picking arms.",
		"Employees: 240 at the end of 2024.",
		"Annual revenue: EUR 38 million (2023: EUR 31 million).",
		"Chief executive: Dr. Lena Hoffmann.",
		"Headquarters: Leopoldstrasse 100, 80802 Munich, Bavaria, Germany.")
	page2 := pdfText(14, 770, "Products and markets") + pdfText(11, 740,
		"Atlas: a six-axis picking arm for e-commerce warehouses.",
		"Courier: a mobile robot that moves shelves to packing stations.",
		"Customers in 14 countries; 62 percent of revenue outside Germany.")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> /Contents 6 0 R >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 5 0 R >> >> /Contents 7 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(page1), page1),
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(page2), page2),
		"<< /Title (Acme Robotics GmbH Annual Report 2024) /Author (Acme Robotics GmbH) /Producer (enrich test fixture) >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xE2\xE3\xCF\xD3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, len(objs), xref)
	return b.Bytes()
}

// pdfText is a text object showing lines from (72, y) down.
func pdfText(size, y int, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "BT\n/F1 %d Tf\n%d TL\n72 %d Td\n", size, size+5, y)
	for i, l := range lines {
		if i > 0 {
			b.WriteString("T*\n")
		}
		l = strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(l)
		fmt.Fprintf(&b, "(%s) Tj\n", l)
	}
	b.WriteString("ET\n")
	return b.String()
}

func testImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 160, 255})
		}
	}
	return img
}

func pngImage(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, testImage(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegImage(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, testImage(w, h), &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gifImage(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, testImage(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webpPixel is a 1x1 lossless WebP (the Go libraries only decode WebP).
func webpPixel(t *testing.T) []byte {
	b, err := base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const acmeHTML = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Acme Robotics GmbH</title>
<style>body { font-family: sans-serif }</style>
<script>var tracking = "do not read me";</script></head>
<body><h1>Acme   Robotics</h1>
<p>Founded in <b>2011</b> in Munich.<br>240 employees.</p>
<ul><li>Atlas &amp; Courier</li><li>Revenue: EUR 38&nbsp;million</li></ul>
<table><tr><th>Year</th><th>Revenue</th></tr><tr><td>2024</td><td>38</td></tr></table>
</body></html>
`

const acmeRTF = `{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\fswiss Helvetica;}}{\colortbl;\red0\green0\blue0;}
{\info{\title Secret title}{\author Nobody}}
{\*\generator Test 1.0;}\pard\f0\fs24 Acme Robotics GmbH\par
M\'fcnchen office\tab 240 employees\par
Revenue \u8364?38 million\par
{\*\shppict{\pict\pngblip 89504e47}}Caf\u233\'e9 \{braces\} and \\backslash\line end\par
}`

func docx(t *testing.T) []byte {
	const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	return buildZip(t,
		zipFile{name: "[Content_Types].xml", body: `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		zipFile{name: "_rels/.rels", body: `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		zipFile{name: "word/document.xml", body: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ` + w + `><w:body>` +
			`<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr><w:r><w:t>Acme Robotics GmbH</w:t></w:r></w:p>` +
			`<w:p><w:r><w:t xml:space="preserve">Founded </w:t></w:r><w:r><w:t>2011</w:t></w:r><w:r><w:tab/><w:t>Munich</w:t></w:r><w:del><w:r><w:delText>Berlin</w:delText></w:r></w:del></w:p>` +
			`<w:p><w:r><w:t>Employees: 240</w:t><w:br/><w:t>Revenue: EUR 38 million</w:t></w:r></w:p>` +
			`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Atlas</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Courier</w:t></w:r></w:p></w:tc></w:tr></w:tbl>` +
			`</w:body></w:document>`},
	)
}

func pptx(t *testing.T) []byte {
	const ns = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`
	slide := func(lines ...string) string {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><p:sld ` + ns + `><p:cSld><p:spTree><p:sp><p:txBody>`)
		for _, l := range lines {
			b.WriteString(`<a:p><a:r><a:t>` + l + `</a:t></a:r></a:p>`)
		}
		b.WriteString(`</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`)
		return b.String()
	}
	// The deck shows slide2.xml first: the order is the id list's, not the
	// files' numbers.
	return buildZip(t,
		zipFile{name: "[Content_Types].xml", body: `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`},
		zipFile{name: "ppt/presentation.xml", body: `<?xml version="1.0" encoding="UTF-8"?><p:presentation ` + ns + `><p:sldIdLst><p:sldId id="256" r:id="rId3"/><p:sldId id="257" r:id="rId2"/></p:sldIdLst></p:presentation>`},
		zipFile{name: "ppt/_rels/presentation.xml.rels", body: `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide2.xml"/></Relationships>`},
		zipFile{name: "ppt/slides/slide1.xml", body: slide("Revenue: EUR 38 million", "240 employees")},
		zipFile{name: "ppt/slides/slide2.xml", body: slide("Acme Robotics GmbH", "Investor deck 2024")},
	)
}

func odt(t *testing.T) []byte {
	return buildZip(t,
		zipFile{name: "mimetype", body: "application/vnd.oasis.opendocument.text", store: true},
		zipFile{name: "META-INF/manifest.xml", body: `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/></manifest:manifest>`},
		zipFile{name: "content.xml", body: `<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>` +
			`<text:h text:outline-level="1">Acme Robotics GmbH</text:h>` +
			`<text:p>Munich<text:s text:c="3"/>since 2011<text:tab/>240 employees<text:line-break/>EUR 38 million</text:p>` +
			`</office:text></office:body></office:document-content>`},
	)
}

func epub(t *testing.T) []byte {
	chapter := func(title, body string) string {
		return `<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>` + title + `</title></head><body><h1>` + title + `</h1><p>` + body + `</p></body></html>`
	}
	// The spine reads ch2.xhtml before ch1.xhtml.
	return buildZip(t,
		zipFile{name: "mimetype", body: "application/epub+zip", store: true},
		zipFile{name: "META-INF/container.xml", body: `<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`},
		zipFile{name: "OEBPS/content.opf", body: `<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest>` +
			`<item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/><item id="c2" href="text/ch%32.xhtml" media-type="application/xhtml+xml"/><item id="css" href="style.css" media-type="text/css"/>` +
			`</manifest><spine><itemref idref="c2"/><itemref idref="c1"/></spine></package>`},
		zipFile{name: "OEBPS/text/ch1.xhtml", body: chapter("Chapter Two", "Atlas and Courier ship to 14 countries.")},
		zipFile{name: "OEBPS/text/ch2.xhtml", body: chapter("Chapter One", "Acme Robotics GmbH was founded in 2011 in Munich.")},
		zipFile{name: "OEBPS/style.css", body: "h1 { color: red }"},
	)
}

func xlsx(t *testing.T) []byte {
	f := excelize.NewFile()
	defer f.Close()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.SetSheetName("Sheet1", "Figures"))
	must(f.SetSheetRow("Figures", "A1", &[]any{"Year", "Revenue (EUR m)", "Employees"}))
	must(f.SetSheetRow("Figures", "A2", &[]any{2023, 31, 205}))
	must(f.SetSheetRow("Figures", "A3", &[]any{2024, 38.5, 240}))
	_, err := f.NewSheet("Locations")
	must(err)
	must(f.SetSheetRow("Locations", "A1", &[]any{"Munich", "Headquarters"}))
	must(f.SetSheetRow("Locations", "A3", &[]any{"Berlin", "Sales office"}))
	var b bytes.Buffer
	must(f.Write(&b))
	return b.Bytes()
}
