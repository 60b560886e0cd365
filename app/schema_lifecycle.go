package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// MaxDeletedListed bounds the trash listing.
const MaxDeletedListed = 200

// The codes of the lifecycle's refusals (HTTP 409).
const (
	CodeSchemaInUse         = "schema_in_use"
	CodeRestoreExpired      = "restore_window_expired"
	CodeSchemaNotLinked     = "schema_not_linked"
	CodeSchemaLinked        = "schema_linked"
	CodeConfirmTransforms   = "confirm_transforms_required"
	CodeKeyLanguageRequired = "key_language_required"
	CodeKeyLanguageLocked   = "key_language_locked"
	codeInvalidKeyLanguage  = "invalid_language"
)

// LifecycleError gives a domain refusal of the schema lifecycle its stable
// code (the Code* constants), keeping the domain's words as the detail;
// other errors come back as they are.
func LifecycleError(err error) error {
	for _, c := range []struct {
		kind error
		code string
	}{
		{schema.ErrInUse, CodeSchemaInUse},
		{schema.ErrRestoreExpired, CodeRestoreExpired},
		{schema.ErrNotLinked, CodeSchemaNotLinked},
		{schema.ErrLinked, CodeSchemaLinked},
		{schema.ErrConfirmTransforms, CodeConfirmTransforms},
		{schema.ErrKeyLanguageRequired, CodeKeyLanguageRequired},
		{schema.ErrKeyLanguageLocked, CodeKeyLanguageLocked},
	} {
		if errors.Is(err, c.kind) {
			if _, ok := AsError(err); ok {
				return err
			}
			return coded(c.kind, c.code, "%s", err.Error())
		}
	}
	return err
}

func (s *SchemaService) window() time.Duration {
	if s.RestoreWindow > 0 {
		return s.RestoreWindow
	}
	return schema.RestoreWindow
}

// update changes a live schema under its lock: a trashed one is 404.
func (s *SchemaService) update(ctx context.Context, orgID, id string, fn func(*schema.Schema) error) (*schema.Schema, error) {
	sc, err := s.Schemas.UpdateSchema(ctx, orgID, id, func(sc *schema.Schema) error {
		if sc.Deleted() {
			return schemaNotFound(id)
		}
		return fn(sc)
	})
	if errors.Is(err, ports.ErrNotFound) {
		if _, ok := AsError(err); !ok {
			return nil, schemaNotFound(id)
		}
	}
	if err != nil {
		return nil, LifecycleError(err)
	}
	schemaChanged(ctx, s.SchemaCache, orgID, id)
	return sc, nil
}

func checkID(id string) error { return checkText("id", id) }

// SchemaUpdate is a PATCH of a saved schema: nil fields stay as they are.
type SchemaUpdate struct {
	Name        *string
	Description *string
	// Tags replaces the tags when not nil (an empty list clears them).
	Tags     *[]string
	IsPinned *bool
	// Schema (or SchemaContent, the reference's name) replaces the working
	// copy.
	Schema, SchemaContent json.RawMessage
	// KeyLanguage presets the key-language lock ("" clears it) while the
	// schema has not been published with another one.
	KeyLanguage *string
	// The reference's other fields, accepted like create accepts them.
	EntitySamples, FormValues json.RawMessage
	AmbiguityCheckEnabled     *bool
}

// Update renames, retags, pins, describes or edits a live schema. A new
// name that a live schema has gets a unique suffix; a content change goes
// to the working copy (see schema.Schema.Edit). Every change moves
// updated_at (a patch that changes nothing does not).
func (s *SchemaService) Update(ctx context.Context, p *access.Principal, id string, in SchemaUpdate) (*schema.Schema, error) {
	if err := access.Authorize(p, access.ActUpdateSchema); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	u, err := s.checkUpdate(ctx, in)
	if err != nil {
		return nil, err
	}
	current, err := s.live(ctx, p.OrgID, id)
	if err != nil {
		return nil, err
	}
	if in.Name != nil && u.name != current.Name {
		if u.name, err = s.uniqueName(ctx, p.OrgID, u.name, current.Name); err != nil {
			return nil, err
		}
	}
	now := s.Clock.Now()
	return s.update(ctx, p.OrgID, id, func(sc *schema.Schema) error { return u.apply(sc, now) })
}

// checkedUpdate is a checked SchemaUpdate: its name and tags normalised,
// its document compacted (null: no content change).
type checkedUpdate struct {
	in   SchemaUpdate
	name string
	tags []string
	doc  json.RawMessage
	null bool
}

// checkUpdate checks every field of a schema update before any read.
func (s *SchemaService) checkUpdate(ctx context.Context, in SchemaUpdate) (*checkedUpdate, error) {
	for _, f := range []struct {
		name string
		v    any
	}{{"name", in.Name}, {"description", in.Description}, {"tags", in.Tags}, {"schema", in.Schema},
		{"schema_content", in.SchemaContent}, {"key_language", in.KeyLanguage}} {
		if err := checkText(f.name, f.v); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"entity_samples", in.EntitySamples}, {"form_values", in.FormValues}} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return nil, notSupported(f.name, "%s: keeping generation metadata with a schema is not supported yet; send null", f.name)
		}
	}
	u := &checkedUpdate{in: in}
	if in.Name != nil {
		n, err := schema.CheckName(*in.Name)
		if err != nil {
			return nil, fieldError(err)
		}
		u.name = n
	}
	if in.Description != nil && len(*in.Description) > schema.MaxDescriptionLen {
		return nil, Invalid("description", "description is longer than %d characters", schema.MaxDescriptionLen)
	}
	if in.Tags != nil {
		t, err := schema.CheckTags(*in.Tags)
		if err != nil {
			return nil, fieldError(err)
		}
		u.tags = t
	}
	doc, err := NewSchemaInput{Schema: in.Schema, SchemaContent: in.SchemaContent}.document()
	if err != nil {
		return nil, err
	}
	u.null = len(doc) == 0 || string(doc) == "null"
	if !u.null {
		field := "schema"
		if len(in.Schema) == 0 || string(in.Schema) == "null" {
			field = "schema_content"
		}
		if err := s.checkDocument(ctx, "x", doc, field); err != nil {
			return nil, err
		}
		doc = compact(doc)
	}
	u.doc = doc
	if in.KeyLanguage != nil && *in.KeyLanguage != "" {
		if _, ok := Languages[*in.KeyLanguage]; !ok {
			return nil, coded(ports.ErrInvalid, codeInvalidKeyLanguage, "key_language: unknown language %q; GET /api/enrichment/options lists the ISO 639-1 codes", *in.KeyLanguage).(*Error).at("key_language")
		}
	}
	return u, nil
}

// apply makes the update to sc at now; updated_at moves only when
// something changed.
func (u *checkedUpdate) apply(sc *schema.Schema, now time.Time) error {
	in := u.in
	if in.KeyLanguage != nil && *in.KeyLanguage != sc.KeyLanguage && sc.PublishedContent != nil && sc.KeyLanguage != "" {
		return fmt.Errorf("the key language is locked to %q by a publish: %w", sc.KeyLanguage, schema.ErrKeyLanguageLocked)
	}
	was := fmt.Sprint(sc.Name, "\x00", sc.Description, "\x00", sc.Tags, "\x00", sc.IsPinned, "\x00", sc.KeyLanguage)
	if in.Name != nil {
		sc.Name = u.name
	}
	if in.Description != nil {
		sc.Description = *in.Description
	}
	if in.Tags != nil {
		sc.Tags = u.tags
	}
	if in.IsPinned != nil {
		sc.IsPinned = *in.IsPinned
	}
	if in.KeyLanguage != nil {
		sc.KeyLanguage = *in.KeyLanguage
	}
	changed := was != fmt.Sprint(sc.Name, "\x00", sc.Description, "\x00", sc.Tags, "\x00", sc.IsPinned, "\x00", sc.KeyLanguage)
	if !u.null && schema.ContentHash(u.doc) != sc.ContentHash {
		sc.Edit(u.doc, now)
		changed = true
	}
	if changed { // a patch that changes nothing leaves updated_at alone
		sc.UpdatedAt = now
	}
	return nil
}

// Duplicate copies a live schema (its working copy, description and tags)
// into a new draft: not linked, not pinned, never published. Its name is
// newName, or the source's, made unique ("Company (2)").
func (s *SchemaService) Duplicate(ctx context.Context, p *access.Principal, id, newName string) (*schema.Schema, error) {
	if err := access.Authorize(p, access.ActDuplicateSchema); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := checkText("new_name", newName); err != nil {
		return nil, err
	}
	src, err := s.live(ctx, p.OrgID, id)
	if err != nil {
		return nil, err
	}
	// Saved before the limits, or under higher ones: not copied past them.
	if err := checkLimits(s.Compiler, "schema", src.Content); err != nil {
		return nil, err
	}
	name := src.Name
	if newName != "" {
		n, err := schema.CheckName(newName)
		if err != nil {
			return nil, Invalid("new_name", "new_name: %s", err.Error())
		}
		name = n
	}
	now := s.Clock.Now()
	dup := &schema.Schema{ID: s.IDs.NewID(), OrgID: p.OrgID, Name: name, Description: src.Description,
		Tags: src.Tags, CreatedAt: now, UpdatedAt: now}
	dup.SetContent(src.Content)
	if err := s.store(ctx, dup); err != nil {
		return nil, err
	}
	return dup, nil
}

// Deletion is what a delete did.
type Deletion struct {
	Schema *schema.Schema
	// Released lists the uses that cascade ended ("a linked database").
	Released []string
	// RestorableUntil is when a soft-deleted schema stops being restorable.
	RestorableUntil time.Time
}

// uses lists what uses sc: its database link, then the other users'.
func (s *SchemaService) uses(ctx context.Context, sc *schema.Schema) ([]string, error) {
	out := sc.Uses()
	for _, u := range s.Users {
		more, err := u.SchemaUses(ctx, sc.OrgID, sc.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// release ends the other users' uses of a schema (cascade).
func (s *SchemaService) release(ctx context.Context, sc *schema.Schema) error {
	for _, u := range s.Users {
		if err := u.ReleaseSchema(ctx, sc.OrgID, sc.ID); err != nil {
			return err
		}
	}
	return nil
}

// inUse refuses deleting a schema something uses, unless cascade.
func inUse(id string, uses []string, cascade bool) error {
	if len(uses) == 0 || cascade {
		return nil
	}
	return fmt.Errorf("schema %s is used by %v; delete with cascade=true to unlink it first: %w", id, uses, schema.ErrInUse)
}

// anySchema authorizes act and reads one of the organization's schemas,
// live or in the trash (an unknown or foreign id is 404).
func (s *SchemaService) anySchema(ctx context.Context, p *access.Principal, act access.Action, id string) (*schema.Schema, error) {
	if err := access.Authorize(p, act); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	cur, err := s.Schemas.GetSchema(ctx, p.OrgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, schemaNotFound(id)
	}
	return cur, err
}

// Delete moves a schema to the trash, restorable for RestoreWindow. A
// schema in use (linked to a database, later a benchmark) is refused with
// 409 schema_in_use unless cascade, which unlinks it first. Deleting a
// schema in the trash changes nothing (its first deletion time stays).
func (s *SchemaService) Delete(ctx context.Context, p *access.Principal, id string, cascade bool) (*Deletion, error) {
	cur, err := s.anySchema(ctx, p, access.ActDeleteSchema, id)
	if err != nil {
		return nil, err
	}
	d := &Deletion{}
	if !cur.Deleted() {
		uses, err := s.uses(ctx, cur)
		if err != nil {
			return nil, err
		}
		if err := inUse(id, uses, cascade); err != nil {
			return nil, LifecycleError(err)
		}
		if cascade && len(uses) > 0 {
			if err := s.release(ctx, cur); err != nil {
				return nil, err
			}
			d.Released = uses
		}
	}
	now := s.Clock.Now()
	var sc *schema.Schema
	trash := func(ctx context.Context, schemas ports.SchemaStore, dbs ports.DatabaseStore) (err error) {
		if cascade && !cur.Deleted() {
			if err := dropLinks(ctx, dbs, p.OrgID, id); err != nil {
				return err
			}
		}
		sc, err = schemas.UpdateSchema(ctx, p.OrgID, id, func(sc *schema.Schema) error {
			if sc.Deleted() {
				return nil
			}
			if err := inUse(id, sc.Uses(), cascade); err != nil { // linked meanwhile
				return err
			}
			sc.Unlink(now)
			sc.Delete(now)
			return nil
		})
		return err
	}
	if s.UoW != nil {
		err = s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error { return trash(ctx, r.Schemas, r.Databases) })
	} else {
		err = trash(ctx, s.Schemas, nil)
	}
	if errors.Is(err, ports.ErrNotFound) {
		return nil, schemaNotFound(id)
	} else if err != nil {
		return nil, LifecycleError(err)
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, id)
	d.Schema, d.RestorableUntil = sc, sc.RestorableUntil(s.window())
	return d, nil
}

// Restore takes a schema out of the trash within RestoreWindow of its
// deletion; later it is 409 restore_window_expired (the schema stays in
// the trash until deleted permanently). Restoring a live schema changes
// nothing. A restored schema whose name a live schema took meanwhile gets
// a unique suffix.
func (s *SchemaService) Restore(ctx context.Context, p *access.Principal, id string) (*schema.Schema, error) {
	cur, err := s.anySchema(ctx, p, access.ActRestoreSchema, id)
	if err != nil {
		return nil, err
	}
	if !cur.Deleted() {
		return cur, nil
	}
	name, err := s.uniqueName(ctx, p.OrgID, cur.Name, "")
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	sc, err := s.Schemas.UpdateSchema(ctx, p.OrgID, id, func(sc *schema.Schema) error {
		if !sc.Deleted() {
			return nil
		}
		if err := sc.Restore(now, s.window()); err != nil {
			return err
		}
		sc.Name = name
		return nil
	})
	if errors.Is(err, ports.ErrNotFound) {
		return nil, schemaNotFound(id)
	} else if err != nil {
		return nil, LifecycleError(err)
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, id)
	return sc, nil
}

// Trashed is a schema in the trash.
type Trashed struct {
	Schema          *schema.Schema
	RestorableUntil time.Time
	Restorable      bool
}

// ListDeleted lists the organization's trash, most recently deleted first
// (at most MaxDeletedListed).
func (s *SchemaService) ListDeleted(ctx context.Context, p *access.Principal) ([]Trashed, error) {
	if err := access.Authorize(p, access.ActListDeletedSchemas); err != nil {
		return nil, err
	}
	scs, err := s.Schemas.ListDeletedSchemas(ctx, p.OrgID, MaxDeletedListed)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	out := make([]Trashed, 0, len(scs))
	for _, sc := range scs {
		until := sc.RestorableUntil(s.window())
		out = append(out, Trashed{Schema: sc, RestorableUntil: until, Restorable: !now.After(until)})
	}
	return out, nil
}

// DeletePermanently removes a schema, live or in the trash, for good; the
// same in-use rule as Delete applies. Its records stay (the purge removes
// them). An unknown id is 404, so a repeated call is 404 too.
func (s *SchemaService) DeletePermanently(ctx context.Context, p *access.Principal, id string, cascade bool) (*Deletion, error) {
	cur, err := s.anySchema(ctx, p, access.ActDeleteSchema, id)
	if err != nil {
		return nil, err
	}
	uses, err := s.uses(ctx, cur)
	if err != nil {
		return nil, err
	}
	if err := inUse(id, uses, cascade); err != nil {
		return nil, LifecycleError(err)
	}
	if cascade && len(uses) > 0 {
		if err := s.release(ctx, cur); err != nil {
			return nil, err
		}
	}
	remove := func(ctx context.Context, st ports.SchemaStore, dbs ports.DatabaseStore) error {
		if cascade {
			if err := dropLinks(ctx, dbs, p.OrgID, id); err != nil {
				return err
			}
		}
		if _, err := st.UpdateSchema(ctx, p.OrgID, id, func(sc *schema.Schema) error {
			return inUse(id, sc.Uses(), cascade)
		}); err != nil {
			return err
		}
		return st.DeleteSchema(ctx, p.OrgID, id)
	}
	if s.UoW != nil {
		err = s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error { return remove(ctx, r.Schemas, r.Databases) })
	} else {
		err = remove(ctx, s.Schemas, nil)
	}
	if errors.Is(err, ports.ErrNotFound) {
		return nil, schemaNotFound(id)
	} else if err != nil {
		return nil, LifecycleError(err)
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, id)
	d := &Deletion{Schema: cur}
	if cascade {
		d.Released = uses
	}
	return d, nil
}

// SaveDeduplicated saves a schema unless the organization already has a
// live schema with the same document (by schema.ContentHash of the
// compacted document), which it returns instead with created false. Schema
// generation saves through it.
func (s *SchemaService) SaveDeduplicated(ctx context.Context, p *access.Principal, in NewSchemaInput) (sc *schema.Schema, created bool, err error) {
	sc, err = s.newSchema(ctx, p, in)
	if err != nil {
		return nil, false, err
	}
	found, err := s.Schemas.FindSchemaByHash(ctx, p.OrgID, sc.ContentHash)
	if err == nil {
		return found, false, nil
	}
	if !errors.Is(err, ports.ErrNotFound) {
		return nil, false, err
	}
	if err := s.store(ctx, sc); err != nil {
		return nil, false, err
	}
	return sc, true, nil
}
