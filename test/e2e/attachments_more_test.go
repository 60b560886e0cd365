package e2e_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeanthropic"
	"github.com/entityenrich/enrich/test/fakeopenai"
	"github.com/entityenrich/enrich/test/fakeports"
	"github.com/entityenrich/enrich/test/pgtest"
)

// docCatalog declares the fakes' models as reading PDFs and images, so
// that a job naming them with attachments is accepted and sends the bytes.
const docCatalog = `{"models": [
  {"model": "doc-reader", "context_length": 128000, "structured_output": true, "strict_schema": true, "pdf": true, "vision": true},
  {"model": "doc-reader-c", "context_length": 200000, "structured_output": true, "pdf": true, "vision": true}
]}`

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// userParts is every content part (OpenAI) or block (Anthropic) of a
// request's user messages.
func userParts[M any](msgs []M, role func(M) string, parts func(M) []map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		if role(m) == "user" {
			out = append(out, parts(m)...)
		}
	}
	return out
}

// TestAttachmentsReachProvidersNatively: through real HTTP, an enrichment
// with a PDF and a PNG sends their exact bytes to an OpenAI-compatible
// provider (an image_url part and a file part, both data URLs) and to an
// Anthropic one (an image block and a document block, both base64).
func TestAttachmentsReachProvidersNatively(t *testing.T) {
	is := is.New(t)
	pdf, png := readTestdata(t, "acme-annual-report.pdf"), readTestdata(t, "acme-logo.png")
	oai := fakeopenai.New(t, fakeopenai.WithModels("doc-reader"))
	ant := fakeanthropic.New(t)
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	is.NoErr(os.WriteFile(catalog, []byte(docCatalog), 0o600))
	cfg := testConfig("")
	cfg.ModelCatalog = catalog
	cfg.Providers = []llm.ProviderConfig{
		{Name: "oai", Type: "openai", BaseURL: oai.URL(), APIKey: "k-oai", Models: []string{"doc-reader"}},
		{Name: "claude", Type: "anthropic", BaseURL: ant.URL(), APIKey: "k-ant", Models: []string{"doc-reader-c"}},
	}
	s := start(t, cfg)
	ten := s.register("natively@example.com")
	ids := uploadAll(t, s, ten.key, upFile{name: "acme-annual-report.pdf", data: pdf}, upFile{name: "acme-logo.png", data: png})
	schemaID := s.createSchema(ten.key, "Company", `{"type":"object","required":["name"],"properties":{
		"name":{"type":"string"},"industry":{"type":"string"}}}`)
	run := func(model string) {
		t.Helper()
		id := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{model},
			"attachment_ids": []string{ids["acme-annual-report.pdf"], ids["acme-logo.png"]}})
		evs := s.follow(ten.key, id, "")
		if end := last(evs); end.Name != "completed" {
			t.Fatalf("%s: job ended %s: %v", model, end.Name, end.Data)
		}
	}
	pngURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	pdfURL := "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf)

	t.Run("OpenAI chat: image_url and file parts", func(t *testing.T) {
		is := is.New(t)
		run("oai::doc-reader")
		req, ok := oai.LastRequest()
		is.True(ok)
		is.Equal(req.API, "chat")
		is.Equal(req.Model, "doc-reader")
		parts := userParts(req.Messages, func(m fakeopenai.ChatMessage) string { return m.Role },
			func(m fakeopenai.ChatMessage) []map[string]any { return m.Parts })
		var images, files []map[string]any
		for _, p := range parts {
			switch p["type"] {
			case "image_url":
				images = append(images, p["image_url"].(map[string]any))
			case "file":
				files = append(files, p["file"].(map[string]any))
			}
		}
		is.Equal(len(images), 1)
		is.Equal(images[0]["url"], pngURL) // exactly the PNG's bytes
		is.Equal(len(files), 1)
		is.Equal(files[0]["file_data"], pdfURL) // exactly the PDF's bytes
	})

	t.Run("Anthropic: image and document blocks", func(t *testing.T) {
		is := is.New(t)
		run("claude::doc-reader-c")
		req, ok := ant.LastRequest()
		is.True(ok)
		is.Equal(req.Model, "doc-reader-c")
		blocks := userParts(req.Messages, func(m fakeanthropic.Message) string { return m.Role },
			func(m fakeanthropic.Message) []map[string]any { return m.Blocks })
		sources := map[string]map[string]any{}
		for _, b := range blocks {
			if typ, _ := b["type"].(string); typ == "image" || typ == "document" {
				_, dup := sources[typ]
				is.True(!dup) // one block of each
				sources[typ] = b["source"].(map[string]any)
			}
		}
		is.Equal(sources["image"], map[string]any{"type": "base64", "media_type": "image/png",
			"data": base64.StdEncoding.EncodeToString(png)})
		is.Equal(sources["document"], map[string]any{"type": "base64", "media_type": "application/pdf",
			"data": base64.StdEncoding.EncodeToString(pdf)})
	})
}

// TestAttachmentUsedAcrossReplicas: a PDF uploaded through one server
// grounds every enrichment started through another on the same
// PostgreSQL, whichever of the two runs the job from the shared queue.
func TestAttachmentUsedAcrossReplicas(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	// One worker each and models slower than a wait for a free worker: b
	// cannot run them all itself, so the shared queue hands some to a.
	cfg := testConfig(dsn)
	cfg.Workers, cfg.SandboxLatency = 1, 600*time.Millisecond
	a, b := start(t, cfg), start(t, cfg)
	ten := a.register("replicas-grounded@example.com")
	pdf := uploadAll(t, a, ten.key, upFile{name: "acme.pdf", data: fakeports.PDF("name: Acme Robotics", "industry: warehouse robots")})["acme.pdf"]
	schemaID := a.createSchema(ten.key, "Company", `{"type":"object","required":["name"],"properties":{
		"name":{"type":"string"},"industry":{"type":"string"}}}`)
	const jobs = 8
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = b.startJob(ten.key, obj{"entity_data": obj{"name": fmt.Sprintf("Acme %d", i)}, "schema_id": schemaID,
			"models": []string{"sandbox::echo"}, "attachment_ids": []string{pdf}})
	}
	var wg sync.WaitGroup
	results := make([]event, jobs)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := []*service{a, b}[i%2] // followed through either server
			results[i] = last(srv.follow(ten.key, id, ""))
		}()
	}
	wg.Wait()
	for i, end := range results {
		if end.Name != "completed" {
			t.Fatalf("job %d ended %s: %v", i, end.Name, end.Data)
		}
		is.Equal(end.Data["result"].(obj)["industry"], "warehouse robots") // from the PDF uploaded through a
	}
	ranA, ranB := a.jobsCompleted(), b.jobsCompleted()
	t.Logf("jobs run by server a: %d, by server b: %d", ranA, ranB)
	is.Equal(ranA+ranB, jobs)
	is.True(ranA > 0 && ranB > 0) // both servers ran some
}

// jobsCompleted is how many enrichment jobs this server ran to completion,
// from its metrics.
func (s *service) jobsCompleted() int {
	s.t.Helper()
	_, body := scrape(s.t, s.url+"/metrics")
	const prefix = `enrich_jobs_ended_total{code="",state="completed",type="enrichment"} `
	for _, line := range strings.Split(body, "\n") {
		if n, ok := strings.CutPrefix(line, prefix); ok {
			var v int
			if _, err := fmt.Sscan(n, &v); err != nil {
				s.t.Fatalf("metrics: %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// zipBombDocx is a .docx (its [Content_Types].xml and word/document.xml)
// whose document is mib MiB of zeros, deflated: 1 GiB of body is about a
// megabyte on the wire. The deflate stream is one compressed MiB repeated,
// since compressing the whole GiB takes most of a minute under -race.
func zipBombDocx(t *testing.T, mib int) []byte {
	t.Helper()
	chunk := make([]byte, 1<<20)
	var seg bytes.Buffer
	fw, _ := flate.NewWriter(&seg, flate.BestSpeed)
	_, _ = fw.Write(chunk)
	_ = fw.Flush() // byte-aligned, not final: segments may follow one another
	var body bytes.Buffer
	crc := uint32(0)
	for range mib {
		body.Write(seg.Bytes())
		crc = crc32.Update(crc, crc32.IEEETable, chunk)
	}
	body.Write([]byte{0x03, 0x00}) // an empty final block
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, err := w.Create("[Content_Types].xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(`<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)); err != nil {
		t.Fatal(err)
	}
	if f, err = w.CreateRaw(&zip.FileHeader{Name: "word/document.xml", Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(body.Len()), UncompressedSize64: uint64(mib) << 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(body.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestZipBombIsWhatItSays: the bomb's document inflates to exactly its
// zeros (checked on a small one), so the refusal below is for its size.
func TestZipBombIsWhatItSays(t *testing.T) {
	is := is.New(t)
	raw := zipBombDocx(t, 3)
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	is.NoErr(err)
	rc, err := zr.File[1].Open()
	is.NoErr(err)
	got, err := io.ReadAll(rc) // the zip reader checks the CRC at the end
	is.NoErr(err)
	is.Equal(len(got), 3<<20)
	is.True(bytes.Count(got, []byte{0}) == len(got))
}

// TestAttachmentZipBomb: a zip bomb dressed as a .docx is refused with 400
// attachment_too_complex naming the file, before anything is stored, and
// without any 5xx.
func TestAttachmentZipBomb(t *testing.T) {
	bomb := zipBombDocx(t, 1024)     // 1 GiB
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("bomb-" + b.name + "@example.com")
			st, raw := s.upload(ten.key, upFile{name: "notes.txt", data: txtBytes}, upFile{name: "quarterly report.docx",
				contentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", data: bomb})
			is.Equal(st, 400)
			e := decodeAs[apiError](t, raw)
			is.Equal(e.Code, "attachment_too_complex")
			is.Equal(e.Field, "files.1")
			is.True(strings.Contains(e.Detail, "quarterly report.docx"))
			is.Equal(attachmentTotal(s, ten.key), 0) // not even the good text file beside it

			// The service is unharmed: the same request without the bomb
			// stores its file.
			st, _ = s.upload(ten.key, upFile{name: "notes.txt", data: txtBytes})
			is.Equal(st, 200)
			is.Equal(attachmentTotal(s, ten.key), 1)
			_, body := scrape(t, s.url+"/metrics")
			is.True(!strings.Contains(body, `status="5`)) // no 5xx at all
		})
	}
}

// TestAttachmentsReachTheArbiter: a fusion merge's attachment_ids go to
// its arbiter alone: the OpenAI-compatible arbiter receives the PDF as a
// file part, and the fused record lists it.
func TestAttachmentsReachTheArbiter(t *testing.T) {
	is := is.New(t)
	pdf := readTestdata(t, "acme-annual-report.pdf")
	oai := fakeopenai.New(t, fakeopenai.WithModels("doc-reader"))
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	is.NoErr(os.WriteFile(catalog, []byte(docCatalog), 0o600))
	cfg := testConfig("")
	cfg.ModelCatalog = catalog
	cfg.Providers = []llm.ProviderConfig{{Name: "oai", Type: "openai", BaseURL: oai.URL(), APIKey: "k-oai", Models: []string{"doc-reader"}}}
	s := start(t, cfg)
	ten := s.register("arbiter-reads@example.com")
	pdfID := uploadAll(t, s, ten.key, upFile{name: "acme-annual-report.pdf", data: pdf})["acme-annual-report.pdf"]
	schemaID := s.createSchema(ten.key, "Company", fusionSchema)
	var ids []string
	for _, m := range fusionModels {
		evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{m}}), "")
		is.Equal(last(evs).Name, "completed")
		ids = append(ids, last(evs).Data["record_id"].(string))
	}
	is.Equal(oai.Requests(), 0) // the sources were the sandbox's

	var out struct {
		RecordID             string  `json:"record_id"`
		ArbitrationModelUsed *string `json:"arbitration_model_used"`
	}
	is.Equal(s.call("POST", "/api/fusion/merge", ten.key, obj{"result_ids": ids, "arbitration_model": "oai::doc-reader",
		"attachment_ids": []string{pdfID}}, &out), 200)
	is.Equal(oai.Requests(), 1) // one call: the arbiter's
	req, ok := oai.LastRequest()
	is.True(ok)
	is.Equal(req.Model, "doc-reader")
	var files []map[string]any
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p["type"] == "file" {
				files = append(files, p["file"].(map[string]any))
			}
		}
	}
	is.Equal(len(files), 1)
	is.Equal(files[0]["file_data"], "data:application/pdf;base64,"+base64.StdEncoding.EncodeToString(pdf))
	var rec struct {
		Attachments []struct {
			ID string `json:"id"`
		} `json:"attachments"`
	}
	is.Equal(s.call("GET", "/api/records/"+out.RecordID, ten.key, nil, &rec), 200)
	is.Equal(len(rec.Attachments), 1)
	is.Equal(rec.Attachments[0].ID, pdfID)
}
