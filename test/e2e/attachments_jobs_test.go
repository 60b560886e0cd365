package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/fakeports"
)

// uploadAll uploads files through POST /api/attachments and returns their
// ids by filename.
func uploadAll(t *testing.T, s *service, key string, files ...upFile) map[string]string {
	t.Helper()
	st, raw := s.upload(key, files...)
	if st != 200 {
		t.Fatalf("upload: %d %s", st, raw)
	}
	ids := map[string]string{}
	for _, u := range decodeAs[[]uploaded](t, raw) {
		ids[u.Filename] = u.ID
	}
	return ids
}

// TestAttachmentsInJobs: through real HTTP, an enrichment and a sample are
// grounded in a PDF and an image read by the sandbox; the record lists the
// attachments; an unknown id is 400 attachment_not_found before any job; a
// named model without the capability is 400; two attachments of unrelated
// types fail a sample with incoherent_attachments after attachment_coherence.
func TestAttachmentsInJobs(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("att-" + b.name + "@example.com")
			ids := uploadAll(t, s, ten.key,
				upFile{name: "acme.pdf", data: fakeports.PDF("name: Acme Robotics", "industry: warehouse robots", "type: company")},
				upFile{name: "label.png", data: fakeports.PNG(120, 80)},
				upFile{name: "notes.md", data: []byte("ticker: ACME")},
				upFile{name: "soup.txt", data: []byte("type: recipe\nname: Leek soup")})
			pdf, png, notes, recipe := ids["acme.pdf"], ids["label.png"], ids["notes.md"], ids["soup.txt"]
			schemaID := s.createSchema(ten.key, "Company", `{"type":"object","required":["name"],"properties":{
				"name":{"type":"string"},"industry":{"type":"string"},"image_format":{"type":"string"},"image_width":{"type":"integer"}}}`)

			t.Run("enrichment grounded in a PDF and an image", func(t *testing.T) {
				is := is.New(t)
				id := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
					"models": []string{"sandbox::echo"}, "attachment_ids": []string{pdf, png}})
				evs := s.follow(ten.key, id, "")
				done := last(evs)
				is.Equal(done.Name, "completed")
				res := done.Data["result"].(obj)
				is.Equal(res["industry"], "warehouse robots") // from the PDF's text layer
				is.Equal(res["image_format"], "png")          // from the image
				is.Equal(res["image_width"], 120.0)
				var raw obj
				is.Equal(s.call("GET", "/api/records/"+done.Data["record_id"].(string), ten.key, nil, &raw), 200)
				list := raw["attachments"].([]any)
				is.Equal(len(list), 2)
				first := list[0].(obj)
				is.Equal(first["id"], pdf)
				is.Equal(first["filename"], "acme.pdf")
				is.Equal(first["media_type"], "application/pdf")
				is.Equal(first["mode"], "binary")
				is.Equal(first["requires_capability"], "supports_pdf_input")
			})

			t.Run("batch: every entity reads the PDF and the image", func(t *testing.T) {
				is := is.New(t)
				b := s.startBatch(ten.key, obj{"entities": []obj{{"name": "Acme"}, {"name": "Bolt"}}, "schema_id": schemaID,
					"models": []string{"sandbox::echo"}, "attachment_ids": []string{pdf, png}})
				evs := s.follow(ten.key, b.JobID, "")
				is.Equal(last(evs).Name, "completed")
				done := find(evs, "entity_completed")
				is.Equal(len(done), 2)
				for _, e := range done {
					r := e.Data["results"].([]any)[0].(obj)["result"].(obj)
					is.Equal(r["industry"], "warehouse robots") // the PDF, shared by every entity
					is.Equal(r["image_width"], 120.0)           // the image
				}
			})

			t.Run("unknown id is refused before any job", func(t *testing.T) {
				is := is.New(t)
				var e struct {
					Code   string `json:"code"`
					Field  string `json:"field"`
					Detail string `json:"detail"`
				}
				st := s.call("POST", "/api/single/enrich/stream", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
					"attachment_ids": []string{pdf, "missing"}}, &e)
				is.Equal(st, 400)
				is.Equal(e.Code, "attachment_not_found")
				other := s.register("att-other-" + b.name + "@example.com")
				st = s.call("POST", "/api/schema/sample/generate/stream", other.key, obj{"entity_type": "company",
					"attachment_ids": []string{pdf}}, &e)
				is.Equal(st, 400) // another organization's attachment is not there
				is.Equal(e.Code, "attachment_not_found")
			})

			t.Run("sample transcribed from the PDF", func(t *testing.T) {
				is := is.New(t)
				id := s.startSamples(ten.key, obj{"entity_type": "company", "sample_count": 3, "auto_answer": true,
					"model": "sandbox::echo", "attachment_ids": []string{pdf}})
				evs := s.follow(ten.key, id, "")
				is.Equal(last(evs).Name, "completed")
				mc := find(evs, "model_completed")[0]
				samples := mc.Data["samples"].([]any)
				is.Equal(len(samples), 1) // forced to one with attachments
				is.Equal(samples[0].(obj)["industry"], "warehouse robots")
				is.Equal(len(find(evs, "attachment_coherence")), 0) // one attachment: nothing to check
			})

			t.Run("incoherent attachments fail a sample", func(t *testing.T) {
				is := is.New(t)
				id := s.startSamples(ten.key, obj{"entity_type": "company", "auto_answer": true, "model": "sandbox::echo",
					"attachment_ids": []string{pdf, recipe}})
				evs := s.follow(ten.key, id, "")
				coh := find(evs, "attachment_coherence")
				is.Equal(len(coh), 1)
				is.Equal(coh[0].Data["mode"], "incoherent")
				is.True(strings.Contains(coh[0].Data["reason"].(string), "recipe"))
				ex := coh[0].Data["excluded_attachments"].([]any)
				is.Equal(ex[0].(obj)["filename"], "soup.txt")
				end := last(evs)
				is.Equal(end.Name, "failed")
				is.Equal(end.Data["error_code"], "incoherent_attachments")
			})

			t.Run("schema generation and AI edit read the PDF", func(t *testing.T) {
				is := is.New(t)
				var gen obj
				st := s.call("POST", "/api/schema/generate/sync", ten.key, obj{"entity_samples": []obj{{"name": "Bolt"}},
					"model": "sandbox::echo", "attachment_ids": []string{pdf, png}}, &gen)
				is.Equal(st, 200)
				body := mustJSON(gen)
				is.True(strings.Contains(body, `"industry"`))    // from the PDF
				is.True(strings.Contains(body, `"image_width"`)) // from the image
				var edit obj
				st = s.call("POST", "/api/schema/saved/"+schemaID+"/prompt", ten.key, obj{"prompt": "add the fields of the document",
					"model": "sandbox::echo", "attachment_ids": []string{notes}}, &edit)
				is.Equal(st, 200)
				is.True(strings.Contains(mustJSON(edit), `"ticker"`)) // from the notes
				st = s.call("POST", "/api/schema/saved/"+schemaID+"/prompt", ten.key, obj{"prompt": "add the fields of the document",
					"model": "sandbox::echo", "attachment_ids": []string{pdf, png}}, &edit)
				is.Equal(st, 200)
				body = mustJSON(edit)
				is.True(strings.Contains(body, `"type"`))         // the PDF's "type: company" line
				is.True(strings.Contains(body, `"image_height"`)) // the image
			})
		})
	}
}

// TestAttachmentsNeedACapableModel: auto with an image picks a model that
// reads images (app's TestAttachmentsAreCheckedAtSubmit covers the named
// model that cannot: 400 model_lacks_capability).
func TestAttachmentsNeedACapableModel(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("cap@example.com")
	img := uploadAll(t, s, ten.key, upFile{name: "label.png", data: fakeports.PNG(8, 8)})["label.png"]
	schemaID := s.createSchema(ten.key, "Company", `{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`)
	id := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"auto"},
		"attachment_ids": []string{img}})
	evs := s.follow(ten.key, id, "")
	is.Equal(last(evs).Name, "completed")
	picked := find(evs, "model_auto_selected")[0].Data["model"].(string)
	is.True(strings.HasPrefix(picked, "sandbox::")) // the sandbox models read images
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
