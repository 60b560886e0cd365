package enrich

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/blobstore"
	"github.com/entityenrich/enrich/adapters/memory"
)

// TestBlobURL: ENRICH_BLOB_URL moves attachments' bytes to the bucket it
// names (here a directory), the log says where they are, and a URL that
// does not open is a startup error naming the variable.
func TestBlobURL(t *testing.T) {
	t.Run("a directory", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		var logs bytes.Buffer
		cfg := Config{Sandbox: true, PasswordHashing: "fast", BlobURL: "file://" + dir,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		st := provideMemoryStores(nil)
		e, err := NewEmbeddedWithStores(context.Background(), cfg, st)
		is.NoErr(err)
		defer e.Close()
		_, ok := st.Blobs.(*blobstore.Store)
		is.True(ok) // the bucket replaced the stores' blob store
		_, err = st.Blobs.PutBlob(context.Background(), "a/b", strings.NewReader("bytes"))
		is.NoErr(err)
		b, err := os.ReadFile(filepath.Join(dir, "a", "b"))
		is.NoErr(err)
		is.Equal(string(b), "bytes")
		is.True(strings.Contains(logs.String(), "blob_storage=file://"+dir))
	})
	t.Run("the stores' own", func(t *testing.T) {
		is := is.New(t)
		var logs bytes.Buffer
		cfg := Config{Sandbox: true, PasswordHashing: "fast", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		st := provideMemoryStores(nil)
		e, err := NewEmbeddedWithStores(context.Background(), cfg, st)
		is.NoErr(err)
		defer e.Close()
		_, ok := st.Blobs.(*memory.BlobStore)
		is.True(ok)
		is.True(strings.Contains(logs.String(), "blob_storage=memory"))
	})
	for _, u := range []string{"nope://bucket", "file:///does/not/exist", "::"} {
		t.Run(u, func(t *testing.T) {
			is := is.New(t)
			cfg := Config{Sandbox: true, PasswordHashing: "fast", BlobURL: u, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			_, err := NewEmbedded(context.Background(), cfg)
			is.True(err != nil)
			t.Log(err)
			is.True(strings.Contains(err.Error(), "ENRICH_BLOB_URL"))
		})
	}
}
