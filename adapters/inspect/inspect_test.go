package inspect_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/inspect"
	"github.com/entityenrich/enrich/domain/attachment"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// inspectBytes sniffs b under filename, then extracts its text.
func inspectBytes(in inspect.Inspector, b []byte, filename string) (mt, text string, err error) {
	ctx := context.Background()
	r := bytes.NewReader(b)
	mt, err = in.Sniff(ctx, r, int64(len(b)), filename)
	if err != nil {
		return "", "", err
	}
	text, err = in.Extract(ctx, r, int64(len(b)), mt)
	return mt, text, err
}

// TestFormats sniffs and extracts one fixture per format: the type comes
// from the bytes, the text holds what a reader sees and leaves out what
// they don't (scripts, deleted text, metadata groups).
func TestFormats(t *testing.T) {
	tests := []struct {
		file    string
		mt      string
		want    []string
		notWant []string
	}{
		{"acme-annual-report.pdf", inspect.TypePDF, []string{
			"Acme Robotics GmbH - Annual Report 2024\n", "founded in 2011 in Munich", "Employees: 240",
			"Annual revenue: EUR 38 million", "Germany.\n\nProducts and markets\n"}, nil},
		{"acme-logo.png", inspect.TypePNG, nil, nil},
		{"acme-photo.jpg", inspect.TypeJPEG, nil, nil},
		{"acme-anim.gif", inspect.TypeGIF, nil, nil},
		{"acme-pixel.webp", inspect.TypeWebP, nil, nil},
		{"notes.txt", inspect.TypeText, []string{"Acme Robotics GmbH\nMunich office notes: 240 employees."}, nil},
		{"notes.md", inspect.TypeMarkdown, []string{"# Acme Robotics\n\n* founded 2011"}, nil},
		{"page.html", inspect.TypeHTML, []string{
			"Acme Robotics GmbH\n", "Acme Robotics\n", "Founded in 2011 in Munich.\n240 employees.",
			"Atlas & Courier\n", "Revenue: EUR 38\u00A0million", "Year\tRevenue\n2024\t38"},
			[]string{"tracking", "font-family", "<"}},
		{"table.csv", inspect.TypeCSV, []string{
			"company\tcity\temployees\nAcme Robotics GmbH\tMunich\t240\nAcme; Services\tBerlin\t12"}, nil},
		{"letter.rtf", inspect.TypeRTF, []string{
			"Acme Robotics GmbH\nMünchen office\t240 employees\nRevenue €38 million\nCafé {braces} and \\backslash\nend"},
			[]string{"Helvetica", "Secret title", "Nobody", "Test 1.0", "89504e47", "?"}},
		{"report.docx", inspect.TypeDOCX, []string{
			"Acme Robotics GmbH\nFounded 2011\tMunich\nEmployees: 240\nRevenue: EUR 38 million\nAtlas\nCourier"},
			[]string{"Berlin", "\t\t"}},
		{"deck.pptx", inspect.TypePPTX, []string{
			"## Slide 1\nAcme Robotics GmbH\nInvestor deck 2024\n\n## Slide 2\nRevenue: EUR 38 million\n240 employees"}, nil},
		{"memo.odt", inspect.TypeODT, []string{"Acme Robotics GmbH\nMunich   since 2011\t240 employees\nEUR 38 million"}, nil},
		{"book.epub", inspect.TypeEPUB, []string{
			"Chapter One\nAcme Robotics GmbH was founded in 2011 in Munich.\n\nChapter Two\nAtlas and Courier"},
			[]string{"color"}},
		{"figures.xlsx", inspect.TypeXLSX, []string{
			"## Figures\nYear\tRevenue (EUR m)\tEmployees\n2023\t31\t205\n2024\t38.5\t240\n\n## Locations\nMunich\tHeadquarters\nBerlin\tSales office"}, nil},
		{"legacy.doc", inspect.TypeDOC, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			mt, text, err := inspectBytes(inspect.New(), readFixture(t, tt.file), tt.file)
			is.NoErr(err)
			is.Equal(mt, tt.mt)
			if len(tt.want) == 0 {
				is.Equal(text, "") // a binary type without a text layer extracts nothing
			}
			for _, w := range tt.want {
				is.True(strings.Contains(text, w)) // the text holds what the document says
			}
			for _, nw := range tt.notWant {
				is.True(!strings.Contains(text, nw)) // nor what a reader never sees
			}
			is.True(utf8.ValidString(text))
			is.True(!strings.Contains(text, "\x00"))
			_, ok := attachment.PolicyFor(attachment.DefaultPolicies(), mt)
			is.True(ok) // every type sniffed here has a default policy
		})
	}
}

// TestSniffSpoofed: the bytes decide, whatever the name claims.
func TestSniffSpoofed(t *testing.T) {
	elf := append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 120)...)
	exe := append([]byte("MZ\x90\x00\x03\x00\x00\x00"), make([]byte, 120)...)
	tests := []struct {
		name, filename string
		data           []byte
		want           string
	}{
		{"png named pdf", "report.pdf", readFixture(t, "acme-logo.png"), inspect.TypePNG},
		{"pdf named png", "logo.png", readFixture(t, "acme-annual-report.pdf"), inspect.TypePDF},
		{"elf named txt", "notes.txt", elf, inspect.TypeUnknown},
		{"exe named docx", "report.docx", exe, inspect.TypeUnknown},
		{"docx named txt", "notes.txt", readFixture(t, "report.docx"), inspect.TypeDOCX},
		{"xlsx named docx", "report.docx", readFixture(t, "figures.xlsx"), inspect.TypeXLSX},
		{"epub named odt", "memo.odt", readFixture(t, "book.epub"), inspect.TypeEPUB},
		{"html named txt", "page.txt", readFixture(t, "page.html"), inspect.TypeHTML},
		{"html named csv", "table.csv", readFixture(t, "page.html"), inspect.TypeHTML},
		{"text named exe", "setup.exe", []byte("just some words\n"), inspect.TypeText},
		{"csv data named txt", "table.txt", readFixture(t, "table.csv"), inspect.TypeText},
		{"ragged rows named csv", "table.csv", []byte("a,b,c\nd,e\nf\n"), inspect.TypeText},
		{"single column named csv", "table.csv", []byte("a\nb\nc\n"), inspect.TypeText},
		{"tsv", "table.tsv", []byte("a\tb\n1\t2\n"), inspect.TypeCSV},
		{"markdown by name", "README.md", []byte("<!-- note -->\n# Title\n"), inspect.TypeMarkdown},
		{"rtf named doc", "letter.doc", readFixture(t, "letter.rtf"), inspect.TypeRTF},
		{"ole2 named docx", "old.docx", readFixture(t, "legacy.doc"), inspect.TypeDOC},
		{"plain zip", "archive.docx", buildZip(t, zipFile{name: "a.txt", body: "hello"}), inspect.TypeZip},
		{"ods by its mimetype", "sheet.odt", buildZip(t, zipFile{name: "mimetype", body: "application/vnd.oasis.opendocument.spreadsheet", store: true}), "application/vnd.oasis.opendocument.spreadsheet"},
		{"utf-16 text", "notes.txt", []byte("\xFF\xFEA\x00c\x00m\x00e\x00"), inspect.TypeText},
		{"xhtml", "page.xhtml", []byte(`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>x</body></html>`), inspect.TypeHTML},
		{"empty", "empty.txt", nil, inspect.TypeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			mt, err := inspect.New().Sniff(context.Background(), bytes.NewReader(tt.data), int64(len(tt.data)), tt.filename)
			is.NoErr(err)
			is.Equal(mt, tt.want)
		})
	}
}

// TestTextDecoding: text arrives as valid UTF-8 without NUL, whatever
// encoding it was written in.
func TestTextDecoding(t *testing.T) {
	tests := []struct {
		name, mt string
		data     []byte
		want     string
	}{
		{"utf-8 bom", inspect.TypeText, []byte("\xEF\xBB\xBFM\xC3\xBCnchen"), "München"},
		{"utf-16le bom", inspect.TypeText, []byte("\xFF\xFEM\x00\xFC\x00n\x00"), "Mün"},
		{"utf-16be bom", inspect.TypeText, []byte("\xFE\xFF\x00M\x00\xFC\x00n"), "Mün"},
		{"windows-1252", inspect.TypeText, []byte("M\xFCnchen \x80 38"), "München € 38"},
		{"nul removed", inspect.TypeText, []byte("Acme\x00 GmbH"), "Acme GmbH"},
		{"crlf", inspect.TypeMarkdown, []byte("a\r\nb\r\n"), "a\nb"},
		{"blank lines collapsed", inspect.TypeText, []byte("a\n\n\n\nb"), "a\n\nb"},
		{"html charset", inspect.TypeHTML, []byte(`<meta charset="iso-8859-1"><p>M` + "\xFC" + `nchen</p>`), "München"},
		{"html entities", inspect.TypeHTML, []byte(`<p>A &lt;b&gt; &#128512;</p>`), "A <b> \U0001F600"},
		{"html nul", inspect.TypeHTML, []byte("<p>a\x00b</p>"), "ab"},
		{"rtf unicode surrogates", inspect.TypeRTF, []byte(`{\rtf1\uc1 smile \u-10179?\u-8704?!}`), "smile \U0001F600!"},
		{"rtf lone surrogate", inspect.TypeRTF, []byte(`{\rtf1 a\u-10179?b}`), "ab"},
		{"rtf code page", inspect.TypeRTF, []byte(`{\rtf1\ansi\ansicpg1251 \'cf\'f0\'e8}`), "При"},
		{"rtf nul escape", inspect.TypeRTF, []byte(`{\rtf1 a\'00b}`), "ab"},
		{"rtf bin skipped", inspect.TypeRTF, []byte("{\\rtf1 a{\\*\\blob\\bin3 }}}}b}"), "ab"},
		{"rtf unclosed", inspect.TypeRTF, []byte(`{\rtf1 open {\b bold`), "open bold"},
		{"csv comma", inspect.TypeCSV, []byte("a,\"b\nc\",d\n1,2,3\n"), "a\tb c\td\n1\t2\t3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			text, err := inspect.New().Extract(context.Background(), bytes.NewReader(tt.data), int64(len(tt.data)), tt.mt)
			is.NoErr(err)
			is.Equal(text, tt.want)
		})
	}
}

// TestMaxText: text past the bound is refused whole, not cut.
func TestMaxText(t *testing.T) {
	in := inspect.New()
	in.MaxText = 64
	long := strings.Repeat("Acme Robotics ", 10)
	tests := []struct {
		name, mt string
		data     []byte
	}{
		{"text", inspect.TypeText, []byte(long)},
		{"html", inspect.TypeHTML, []byte("<p>" + long + "</p>")},
		{"csv", inspect.TypeCSV, []byte(strings.ReplaceAll(long, " ", ","))},
		{"rtf", inspect.TypeRTF, []byte(`{\rtf1 ` + long + `}`)},
		{"docx", inspect.TypeDOCX, readFixture(t, "report.docx")},
		{"xlsx", inspect.TypeXLSX, readFixture(t, "figures.xlsx")},
		{"pdf", inspect.TypePDF, readFixture(t, "acme-annual-report.pdf")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := in.Extract(context.Background(), bytes.NewReader(tt.data), int64(len(tt.data)), tt.mt)
			is.True(errors.Is(err, attachment.ErrBomb))
		})
	}
}

// TestCorrupt: a document that cannot be parsed is ErrUnreadable, never a
// panic or a server error.
func TestCorrupt(t *testing.T) {
	docx := readFixture(t, "report.docx")
	pdf := readFixture(t, "acme-annual-report.pdf")
	badXML := buildZip(t,
		zipFile{name: "[Content_Types].xml", body: "<Types/>"},
		zipFile{name: "word/document.xml", body: "<w:document><w:body><w:p>"})
	tests := []struct {
		name, filename string
		data           []byte
		mt             string
	}{
		{"truncated docx", "report.docx", docx[:len(docx)/2], inspect.TypeDOCX},
		{"docx without its body", "report.docx", buildZip(t, zipFile{name: "[Content_Types].xml", body: "<Types/>"}, zipFile{name: "word/styles.xml", body: "<x/>"}), inspect.TypeDOCX},
		{"docx with broken xml", "report.docx", badXML, inspect.TypeDOCX},
		{"truncated pdf", "report.pdf", pdf[:len(pdf)/2], inspect.TypePDF},
		{"pdf header only", "report.pdf", []byte("%PDF-1.7\n%garbage"), inspect.TypePDF},
		{"truncated xlsx", "figures.xlsx", readFixture(t, "figures.xlsx")[:3000], inspect.TypeXLSX},
		{"epub without container", "book.epub", buildZip(t, zipFile{name: "mimetype", body: "application/epub+zip", store: true}), inspect.TypeEPUB},
		{"odt without content", "memo.odt", buildZip(t, zipFile{name: "mimetype", body: "application/vnd.oasis.opendocument.text", store: true}), inspect.TypeODT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			mt, _, err := inspectBytes(inspect.New(), tt.data, tt.filename)
			is.Equal(mt, tt.mt)
			is.True(errors.Is(err, attachment.ErrUnreadable)) // a corrupt document is unreadable
		})
	}
}

func TestContextCancelled(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := readFixture(t, "acme-annual-report.pdf")
	_, err := inspect.New().Extract(ctx, bytes.NewReader(b), int64(len(b)), inspect.TypePDF)
	is.True(errors.Is(err, context.Canceled))
}

func TestImageInfo(t *testing.T) {
	tests := []struct {
		file   string
		format string
		w, h   int
	}{
		{"acme-logo.png", "png", 64, 48},
		{"acme-photo.jpg", "jpeg", 64, 48},
		{"acme-anim.gif", "gif", 16, 8},
		{"acme-pixel.webp", "webp", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			b := readFixture(t, tt.file)
			format, w, h, err := inspect.ImageInfo(bytes.NewReader(b), int64(len(b)))
			is.NoErr(err)
			is.Equal(format, tt.format)
			is.Equal([]int{w, h}, []int{tt.w, tt.h})
		})
	}
	t.Run("not an image", func(t *testing.T) {
		is := is.New(t)
		b := readFixture(t, "acme-annual-report.pdf")
		_, _, _, err := inspect.ImageInfo(bytes.NewReader(b), int64(len(b)))
		is.True(errors.Is(err, attachment.ErrUnreadable))
	})
}

func TestPDFText(t *testing.T) {
	is := is.New(t)
	b := readFixture(t, "acme-annual-report.pdf")
	text, err := inspect.PDFText(bytes.NewReader(b), int64(len(b)))
	is.NoErr(err)
	is.True(strings.HasPrefix(text, "Acme Robotics GmbH - Annual Report 2024\n"))
	is.True(strings.Contains(text, "Annual revenue: EUR 38 million"))

	// The copy the e2e tests and the README use is the same file.
	shared, err := os.ReadFile(filepath.Join("..", "..", "test", "testdata", "acme-annual-report.pdf"))
	is.NoErr(err)
	is.True(bytes.Equal(shared, b))
}
