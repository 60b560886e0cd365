package schema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

const base = `{"type":"object","properties":{"name":{"type":"string","identifying":true},"founded":{"type":"integer"},` +
	`"hq":{"type":"object","properties":{"city":{"type":"string"}}}}}`

func TestCompare(t *testing.T) {
	tests := []struct {
		name                 string
		published, working   string // published "" = never published
		class                schema.Classification
		added, removed       []string
		changed              []string
		transforms           []schema.TransformKind
		addedTypes, removed2 []string
	}{
		{name: "first publish adds everything", working: base, class: schema.Additive,
			added: []string{"founded", "hq", "hq.city", "name"}},
		{name: "identical", published: base, working: base, class: schema.Neutral},
		{name: "description and examples only", published: base,
			working: strings.Replace(base, `"founded":{"type":"integer"}`, `"founded":{"type":"integer","description":"year","examples":[1999]}`, 1),
			class:   schema.Neutral},
		{name: "added property", published: base,
			working: strings.Replace(base, `"founded":{"type":"integer"}`, `"founded":{"type":"integer"},"ceo":{"type":"string"}`, 1),
			class:   schema.Additive, added: []string{"ceo"}},
		{name: "removed nested property", published: base,
			working: strings.Replace(base, `"properties":{"city":{"type":"string"}}`, `"properties":{}`, 1),
			class:   schema.Additive, removed: []string{"hq.city"}},
		{name: "type change", published: base,
			working: strings.Replace(base, `"founded":{"type":"integer"}`, `"founded":{"type":"string"}`, 1),
			class:   schema.Transform, changed: []string{"founded"}, transforms: []schema.TransformKind{schema.ColumnType}},
		{name: "becoming nullable is no type change", published: base,
			working: strings.Replace(base, `"founded":{"type":"integer"}`, `"founded":{"type":["integer","null"]}`, 1),
			class:   schema.Additive, changed: []string{"founded"}},
		{name: "re-key", published: base,
			working: strings.Replace(base, `"founded":{"type":"integer"}`, `"founded":{"type":"integer","identifying":true}`, 1),
			class:   schema.Transform, changed: []string{"founded"}, transforms: []schema.TransformKind{schema.KeySet}},
		{name: "key becomes multilingual", published: base,
			working: strings.Replace(base, `"identifying":true`, `"identifying":true,"multilingual":true`, 1),
			class:   schema.Transform, changed: []string{"name"}, transforms: []schema.TransformKind{schema.KeyMultilinguality}},
		{name: "required changes", published: base,
			working: strings.Replace(base, `"type":"object","properties"`, `"type":"object","required":["founded"],"properties"`, 1),
			class:   schema.Additive, changed: []string{"founded"}},
		{name: "added $defs type and relationship", published: base,
			working: `{"type":"object","properties":{"name":{"type":"string","identifying":true},"founded":{"type":"integer"},` +
				`"hq":{"type":"object","properties":{"city":{"type":"string"}}},"parent":{"$ref":"#/$defs/Company"}},` +
				`"$defs":{"Company":{"type":"object","properties":{"n":{"type":"string"}}}}}`,
			class: schema.Additive, added: []string{"$defs.Company.n", "parent"}, addedTypes: []string{"Company"}},
		{name: "entity type's own keyword", published: base,
			working: strings.Replace(base, `{"type":"object","properties"`, `{"type":"object","additionalProperties":false,"properties"`, 1),
			class:   schema.Additive, changed: []string{""}},
		{name: "transforms sort by entity type, path and kind",
			published: `{"type":"object","properties":{"name":{"type":"string","identifying":true},"founded":{"type":"integer"}},` +
				`"$defs":{"Company":{"type":"object","properties":{"n":{"type":"string"}}}}}`,
			working: `{"type":"object","properties":{"name":{"type":"string","identifying":true},` +
				`"founded":{"type":"string","identifying":true,"shared":true,"ordered":true}},` +
				`"$defs":{"Company":{"type":"object","properties":{"n":{"type":"integer"}}}}}`,
			class: schema.Transform, changed: []string{"n", "founded"},
			transforms: []schema.TransformKind{schema.ColumnType, schema.KeySet, schema.ColumnType, schema.ItemOrder, schema.Ownership}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var pub json.RawMessage
			if tt.published != "" {
				pub = json.RawMessage(tt.published)
			}
			is.True(json.Valid([]byte(tt.working))) // test document
			d := schema.Compare(pub, json.RawMessage(tt.working))
			is.Equal(d.Classification, tt.class)
			is.Equal(d.AddedProperties, tt.added)
			is.Equal(d.RemovedProperties, tt.removed)
			var changed []string
			for _, c := range d.ChangedProperties {
				changed = append(changed, c.Path)
			}
			is.Equal(changed, tt.changed)
			var kinds []schema.TransformKind
			for _, tr := range d.Transforms {
				kinds = append(kinds, tr.Kind)
			}
			is.Equal(kinds, tt.transforms)
			is.Equal(d.AddedTypes, tt.addedTypes)
			is.Equal(d.RequiresConfirm(), tt.class == schema.Transform)
		})
	}
}

func TestPublishState(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	sc := &schema.Schema{ID: "s"}
	sc.SetContent(json.RawMessage(base))
	is.Equal(sc.PublishState(), schema.Draft)
	is.Equal(string(sc.Contract()), base) // a draft runs on its working copy
	_, err := sc.Publish(now, schema.PublishOptions{})
	is.True(errors.Is(err, schema.ErrNotLinked))

	sc.Link(now)
	is.Equal(sc.PublishState(), schema.Unpublished)
	is.Equal(string(sc.Contract()), base) // so does a linked schema never published
	_, err = sc.Publish(now, schema.PublishOptions{})
	is.NoErr(err)
	is.Equal(sc.PublishState(), schema.InSync)

	neutral := strings.Replace(base, `"founded":{"type":"integer"}`, `"founded":{"type":"integer","description":"year"}`, 1)
	sc.Edit(json.RawMessage(neutral), now)
	is.Equal(sc.PublishState(), schema.InSync) // neutral edits propagate
	is.Equal(string(sc.Contract()), neutral)

	typed := strings.Replace(base, `"founded":{"type":"integer"}`, `"founded":{"type":"string"}`, 1)
	sc.Edit(json.RawMessage(typed), now)
	is.Equal(sc.PublishState(), schema.Dirty)
	is.Equal(string(sc.Contract()), neutral) // structural edits wait for the publish
	_, err = sc.Publish(now, schema.PublishOptions{})
	is.True(errors.Is(err, schema.ErrConfirmTransforms))
	is.Equal(sc.PublishState(), schema.Dirty)
	d, err := sc.Publish(now.Add(time.Second), schema.PublishOptions{ConfirmTransforms: true})
	is.NoErr(err)
	is.Equal(d.Classification, schema.Transform)
	is.Equal(sc.PublishState(), schema.InSync)
	is.Equal(string(sc.Contract()), typed)
	is.True(sc.PublishedAt.Equal(now.Add(time.Second)))

	sc.Unlink(now)
	is.Equal(sc.PublishState(), schema.Draft)
}

func TestPublishKeyLanguage(t *testing.T) {
	is := is.New(t)
	now := time.Now()
	sc := &schema.Schema{ID: "s", Linked: true}
	sc.SetContent(json.RawMessage(strings.Replace(base, `"identifying":true`, `"identifying":true,"multilingual":true`, 1)))
	p := sc.PreviewPublish(schema.PublishOptions{})
	is.True(p.RequiresKeyLanguage)
	is.True(!p.CanPublish())
	_, err := sc.Publish(now, schema.PublishOptions{})
	is.True(errors.Is(err, schema.ErrKeyLanguageRequired))
	_, err = sc.Publish(now, schema.PublishOptions{KeyLanguage: "fr"})
	is.NoErr(err)
	is.Equal(sc.KeyLanguage, "fr")
	_, err = sc.Publish(now, schema.PublishOptions{KeyLanguage: "de"})
	is.True(errors.Is(err, schema.ErrKeyLanguageLocked))
	_, err = sc.Publish(now, schema.PublishOptions{}) // locked: no language needed
	is.NoErr(err)
}

func TestDeleteRestore(t *testing.T) {
	is := is.New(t)
	t0 := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	sc := &schema.Schema{ID: "s"}
	is.NoErr(sc.Restore(t0, schema.RestoreWindow)) // a live schema: nothing to do
	sc.Delete(t0)
	is.True(sc.Deleted())
	sc.Delete(t0.Add(5 * time.Second)) // idempotent: the first deletion counts
	is.True(sc.DeletedAt.Equal(t0))
	is.NoErr(sc.Restore(t0.Add(schema.RestoreWindow), schema.RestoreWindow)) // the window's last instant
	is.True(!sc.Deleted())
	sc.Delete(t0)
	err := sc.Restore(t0.Add(schema.RestoreWindow+time.Millisecond), schema.RestoreWindow)
	is.True(errors.Is(err, schema.ErrRestoreExpired))
	is.True(sc.Deleted())
}

func TestUniqueName(t *testing.T) {
	long := strings.Repeat("x", schema.MaxNameLen)
	tests := []struct {
		name  string
		taken []string
		want  string
	}{
		{"Company", nil, "Company"},
		{"Company", []string{"Company"}, "Company (2)"},
		{"Company", []string{"Company", "Company (2)"}, "Company (3)"},
		{"Company (2)", []string{"Company", "Company (2)"}, "Company (3)"},
		{"Company (7)", []string{"Company"}, "Company (7)"},
		{"company", []string{"Company"}, "company"},
		{long, []string{long}, strings.Repeat("x", schema.MaxNameLen-4) + " (2)"},
	}
	for _, tt := range tests {
		is := is.New(t)
		got := schema.UniqueName(tt.name, tt.taken)
		is.Equal(got, tt.want)
		is.True(len(got) <= schema.MaxNameLen)
	}
}

func TestCheckTags(t *testing.T) {
	is := is.New(t)
	got, err := schema.CheckTags([]string{" a ", "b", "a"})
	is.NoErr(err)
	is.Equal(got, []string{"a", "b"})
	_, err = schema.CheckTags([]string{"a", " "})
	var fe *schema.FieldError
	is.True(errors.As(err, &fe))
	is.Equal(fe.Field, "tags.1")
	_, err = schema.CheckTags([]string{strings.Repeat("é", schema.MaxTagLen+1)})
	is.True(errors.As(err, &fe))
	many := make([]string, schema.MaxTags+1)
	for i := range many {
		many[i] = strings.Repeat("t", i+1)
	}
	_, err = schema.CheckTags(many)
	is.True(errors.As(err, &fe))
	is.Equal(fe.Field, "tags")
}

// FuzzCompare: any pair of documents diffs without panicking, and a
// document compared with itself is neutral.
func FuzzCompare(f *testing.F) {
	f.Add(base, strings.Replace(base, `"integer"`, `"string"`, 1))
	f.Add(`{"$defs":{"A":{"properties":{"x":{"items":{"properties":{"y":{"identifying":true}}}}}}}}`, `{"properties":7}`)
	f.Add(`[]`, `null`)
	f.Fuzz(func(t *testing.T, a, b string) {
		_ = schema.Compare(json.RawMessage(a), json.RawMessage(b))
		_ = schema.Compare(nil, json.RawMessage(b))
		_ = schema.KeyIsMultilingual(json.RawMessage(a))
		if d := schema.Compare(json.RawMessage(a), json.RawMessage(a)); d.Classification != schema.Neutral {
			t.Fatalf("%s against itself: %+v", a, d)
		}
	})
}
