package inspect_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/inspect"
	"github.com/entityenrich/enrich/domain/attachment"
)

const contentTypes = `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`

// zerosDocx is a .docx whose body is n zero bytes, deflated: a 1 GiB body
// is about a megabyte on disk.
func zerosDocx(t *testing.T, n int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	w.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestSpeed)
	})
	f, err := w.Create("[Content_Types].xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(contentTypes)); err != nil {
		t.Fatal(err)
	}
	f, err = w.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(f, zeroReader{}, n); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// manyEntriesDocx is a .docx of n empty entries besides its parts.
func manyEntriesDocx(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml"} {
		if _, err := w.Create(name); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if _, err := w.CreateHeader(&zip.FileHeader{Name: "word/media/" + strconv.Itoa(i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lyingDocx declares its body 100 bytes long, but the body inflates to
// 64 MiB of XML text: only the bound on reading can stop it.
func lyingDocx(t *testing.T) []byte {
	t.Helper()
	var body bytes.Buffer
	body.WriteString(`<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>`)
	chunk := bytes.Repeat([]byte("A"), 1<<20)
	var raw bytes.Buffer
	fw, _ := flate.NewWriter(&raw, flate.BestSpeed)
	if _, err := fw.Write(body.Bytes()); err != nil {
		t.Fatal(err)
	}
	crc := crc32.NewIEEE()
	crc.Write(body.Bytes())
	for range 64 {
		if _, err := fw.Write(chunk); err != nil {
			t.Fatal(err)
		}
		crc.Write(chunk)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, err := w.Create("[Content_Types].xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(contentTypes)); err != nil {
		t.Fatal(err)
	}
	h := &zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, CRC32: crc.Sum32(),
		CompressedSize64: uint64(raw.Len()), UncompressedSize64: 100}
	rw, err := w.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestZipBombs: a bomb disguised as a .docx is still sniffed as one (so
// the refusal names what it claims to be) and refused with ErrBomb,
// quickly and without inflating it.
func TestZipBombs(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"1 GiB of zeros", zerosDocx(t, 1<<30)},
		{"a highly compressed entry within the total", zerosDocx(t, 32<<20)},
		{"more entries than the bound", manyEntriesDocx(t, inspect.DefaultMaxEntries+1)},
		{"a header that lies about its size", lyingDocx(t)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			t.Logf("%d bytes on disk", len(tt.data))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			mt, _, err := inspectBytes(inspect.New(), tt.data, "report.docx")
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			is.Equal(mt, inspect.TypeDOCX)
			is.True(errors.Is(err, attachment.ErrBomb)) // refused as a bomb
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("refused in %v, %d KiB allocated: %v", elapsed, allocated>>10, err)
			is.True(allocated < 16<<20)      // without inflating the bomb
			is.True(elapsed < 5*time.Second) // quickly
		})
	}
}

// TestZipWithinBounds: a document with many entries, but fewer than the
// bound, still reads.
func TestZipWithinBounds(t *testing.T) {
	is := is.New(t)
	in := inspect.New()
	in.MaxEntries = 600
	b := manyEntriesDocx(t, 500)
	_, _, err := inspectBytes(in, b, "report.docx")
	is.NoErr(err)

	in.MaxEntries = 400
	_, _, err = inspectBytes(in, b, "report.docx")
	is.True(errors.Is(err, attachment.ErrBomb))
}

// TestPDFBomb: a page whose content stream inflates past the bound is
// refused before the PDF reader interprets it.
func TestPDFBomb(t *testing.T) {
	is := is.New(t)
	var raw bytes.Buffer
	fw, _ := flate.NewWriter(&raw, flate.BestSpeed)
	if _, err := io.CopyN(fw, zeroReader{}, 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	z.Write([]byte{0x78, 0x01}) // zlib header, no dictionary
	z.Write(raw.Bytes())
	z.Write([]byte{0, 0, 0, 0}) // adler32 is not reached: the bound stops first
	pdf := buildPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Contents 4 0 R >>",
		"<< /Length "+strconv.Itoa(z.Len())+" /Filter /FlateDecode >>\nstream\n"+z.String()+"\nendstream",
	)
	in := inspect.New()
	in.MaxUnzipped = 8 << 20
	_, err := in.Extract(context.Background(), bytes.NewReader(pdf), int64(len(pdf)), inspect.TypePDF)
	is.True(errors.Is(err, attachment.ErrBomb))
}

// buildPDF writes objs as objects 1..n with an exact xref table.
func buildPDF(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		b.WriteString(strconv.Itoa(i+1) + " 0 obj\n" + o + "\nendobj\n")
	}
	xref := b.Len()
	b.WriteString("xref\n0 " + strconv.Itoa(len(objs)+1) + "\n0000000000 65535 f \n")
	for _, off := range offsets {
		s := strconv.Itoa(off)
		b.WriteString(string(bytes.Repeat([]byte("0"), 10-len(s))) + s + " 00000 n \n")
	}
	b.WriteString("trailer\n<< /Size " + strconv.Itoa(len(objs)+1) + " /Root 1 0 R >>\nstartxref\n" + strconv.Itoa(xref) + "\n%%EOF\n")
	return b.Bytes()
}
