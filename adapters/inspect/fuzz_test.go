package inspect_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/entityenrich/enrich/adapters/inspect"
	"github.com/entityenrich/enrich/domain/attachment"
)

// fuzzTypes are the media types FuzzExtract feeds bytes to.
var fuzzTypes = []string{
	inspect.TypeText, inspect.TypeMarkdown, inspect.TypeHTML, inspect.TypeCSV, inspect.TypeRTF, inspect.TypePDF,
	inspect.TypeDOCX, inspect.TypeXLSX, inspect.TypePPTX, inspect.TypeODT, inspect.TypeEPUB,
}

// seedFixtures adds every fixture under testdata to the corpus.
func seedFixtures(f *testing.F, add func(name string, b []byte)) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(filepath.Base(p), b)
	}
}

// FuzzSniff: any bytes under any name get a media type, without error
// from an in-memory reader.
func FuzzSniff(f *testing.F) {
	seedFixtures(f, func(name string, b []byte) { f.Add(b, name) })
	f.Fuzz(func(t *testing.T, data []byte, filename string) {
		mt, err := inspect.New().Sniff(context.Background(), bytes.NewReader(data), int64(len(data)), filename)
		if err != nil {
			t.Fatalf("sniff: %v", err)
		}
		if mt == "" || !strings.Contains(mt, "/") {
			t.Fatalf("media type %q", mt)
		}
	})
}

// FuzzExtract: any bytes as any type give valid text within the bound, or
// one of the two refusals; never a panic, a hang or another error.
func FuzzExtract(f *testing.F) {
	seedFixtures(f, func(name string, b []byte) {
		mt, err := inspect.New().Sniff(context.Background(), bytes.NewReader(b), int64(len(b)), name)
		if err != nil {
			f.Fatal(err)
		}
		for i, t := range fuzzTypes {
			if t == mt {
				f.Add(b, uint8(i))
			}
		}
	})
	in := inspect.New()
	in.MaxText, in.MaxUnzipped = 1<<20, 16<<20
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		mt := fuzzTypes[int(kind)%len(fuzzTypes)]
		start := time.Now()
		text, err := in.Extract(context.Background(), bytes.NewReader(data), int64(len(data)), mt)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%s took %v", mt, d)
		}
		if err != nil {
			if !errors.Is(err, attachment.ErrBomb) && !errors.Is(err, attachment.ErrUnreadable) {
				t.Fatalf("%s: unexpected error %v", mt, err)
			}
			return
		}
		if !utf8.ValidString(text) || strings.ContainsRune(text, 0) || int64(len(text)) > in.MaxText {
			t.Fatalf("%s: bad text %q", mt, text)
		}
	})
}
