package app

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// Link links a live schema to a database; Unlink undoes it. Database
// registration (a later capability) will call them; until then they are
// the tests' way to make a schema linked. No HTTP route calls them.
func (s *SchemaService) Link(ctx context.Context, p *access.Principal, id string) (*schema.Schema, error) {
	return s.setLinked(ctx, p, id, true)
}

// Unlink unlinks a live schema from its databases.
func (s *SchemaService) Unlink(ctx context.Context, p *access.Principal, id string) (*schema.Schema, error) {
	return s.setLinked(ctx, p, id, false)
}

func (s *SchemaService) setLinked(ctx context.Context, p *access.Principal, id string, linked bool) (*schema.Schema, error) {
	if err := access.Authorize(p, access.ActLinkSchema); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	return s.update(ctx, p.OrgID, id, func(sc *schema.Schema) error {
		if linked {
			sc.Link(now)
		} else {
			sc.Unlink(now)
		}
		return nil
	})
}

func (in PublishInput) options() (schema.PublishOptions, error) {
	if err := checkText("key_language", in.KeyLanguage); err != nil {
		return schema.PublishOptions{}, err
	}
	if in.KeyLanguage != "" {
		if _, ok := Languages[in.KeyLanguage]; !ok {
			return schema.PublishOptions{}, coded(ports.ErrInvalid, codeInvalidKeyLanguage,
				"key_language: unknown language %q; GET /api/enrichment/options lists the ISO 639-1 codes", in.KeyLanguage).(*Error).at("key_language")
		}
	}
	return schema.PublishOptions{ConfirmTransforms: in.ConfirmTransforms, KeyLanguage: in.KeyLanguage}, nil
}

// Publish makes a linked schema's working copy its published contract,
// which enrichment then runs against. Refusals (409): schema_not_linked,
// key_language_required (a multilingual database key with no language
// locked), key_language_locked, confirm_transforms_required (a re-key or a
// type change not confirmed).
func (s *SchemaService) Publish(ctx context.Context, p *access.Principal, id string, in PublishInput) (*schema.Schema, schema.Diff, error) {
	sc, diff, _, err := s.PublishShipping(ctx, p, id, in)
	return sc, diff, err
}

// PublishShipping is Publish that also ships the new contract's DDL to
// every registration linked to the schema, one schema delta each (the
// changes from what the link shipped; the whole DDL on its first publish),
// in the publish's unit of work, and returns the deltas' ids. A projection
// change that migrates data is refused like the schema's own transforms
// (409 confirm_transforms_required) unless confirm_transforms.
func (s *SchemaService) PublishShipping(ctx context.Context, p *access.Principal, id string, in PublishInput) (*schema.Schema, schema.Diff, []int64, error) {
	if err := access.Authorize(p, access.ActPublishSchema); err != nil {
		return nil, schema.Diff{}, nil, err
	}
	if err := checkID(id); err != nil {
		return nil, schema.Diff{}, nil, err
	}
	opts, err := in.options()
	if err != nil {
		return nil, schema.Diff{}, nil, err
	}
	var diff schema.Diff
	now := s.Clock.Now()
	publish := func(sc *schema.Schema) error {
		// Saved before the limits, or under higher ones: not published
		// past them.
		if err := checkLimits(s.Compiler, "schema", sc.Content); err != nil {
			return err
		}
		d, err := sc.Publish(now, opts)
		diff = d
		return err
	}
	if s.UoW == nil {
		sc, err := s.update(ctx, p.OrgID, id, publish)
		return sc, diff, []int64{}, err
	}
	var sc *schema.Schema
	var ids []int64
	err = s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		var err error
		if sc, err = (&SchemaService{Schemas: r.Schemas}).update(ctx, p.OrgID, id, publish); err != nil {
			return err
		}
		ids, err = shipPublish(ctx, r, sc, in.ConfirmTransforms, now)
		return err
	})
	if err != nil {
		return nil, schema.Diff{}, nil, projectionError(LifecycleError(err))
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, id)
	return sc, diff, ids, nil
}

// ValidatePublish is Publish's dry run without options: the diff and every
// blocker. It changes nothing.
func (s *SchemaService) ValidatePublish(ctx context.Context, p *access.Principal, id string) (*schema.Schema, schema.Preview, error) {
	if err := access.Authorize(p, access.ActValidatePublish); err != nil {
		return nil, schema.Preview{}, err
	}
	if err := checkID(id); err != nil {
		return nil, schema.Preview{}, err
	}
	sc, err := s.live(ctx, p.OrgID, id)
	if err != nil {
		return nil, schema.Preview{}, err
	}
	return sc, sc.PreviewPublish(schema.PublishOptions{}), nil
}

// PurgeEnrichmentData removes every record made under a live schema, and
// its entity state (none is kept yet: 0), in one unit of work, keeping the
// schema. A schema linked to a database is refused with 409 schema_linked.
// Owner only.
func (s *SchemaService) PurgeEnrichmentData(ctx context.Context, p *access.Principal, id string) (*Purge, error) {
	if err := access.Authorize(p, access.ActPurgeSchemaData); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	out := &Purge{}
	purge := func(ctx context.Context, schemas ports.SchemaStore, records ports.RecordStore) error {
		// The schema's lock holds a concurrent link off until the purge
		// commits.
		if _, err := schemas.UpdateSchema(ctx, p.OrgID, id, func(sc *schema.Schema) error {
			if sc.Deleted() {
				return schemaNotFound(id)
			}
			return sc.PurgeCheck()
		}); err != nil {
			return err
		}
		n, err := records.DeleteRecordsBySchema(ctx, p.OrgID, id)
		out.RecordsDeleted = n
		return err
	}
	var err error
	if s.UoW != nil {
		err = s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error { return purge(ctx, r.Schemas, r.Records) })
	} else {
		err = purge(ctx, s.Schemas, s.Records)
	}
	if errors.Is(err, ports.ErrNotFound) {
		if _, ok := AsError(err); !ok {
			return nil, schemaNotFound(id)
		}
	}
	if err != nil {
		return nil, LifecycleError(err)
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, id)
	return out, nil
}

// PublishInput is a publish's options (the reference's SchemaPublishRequest).
type PublishInput struct {
	ConfirmTransforms bool
	KeyLanguage       string
}

// Purge is what a purge of a schema's enrichment data removed.
type Purge struct {
	RecordsDeleted  int
	EntitiesDeleted int
}
