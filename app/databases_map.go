package app

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/domain/schema"
)

// Projected is a schema's relational projection under a registration's
// options (or the defaults): the map and its DDL, or why there is none.
type Projected struct {
	SchemaID   string
	SchemaName string
	// Published says the projection is of the published contract; false:
	// of the working copy (nothing ships before a publish).
	Published bool
	Map       relmap.Map
	DDL       []string
	// Err is why the contract has no projection (relmap.ErrNoKey, ...).
	Err error
	// RequiresKeyLanguage: a multilingual key and no key language.
	RequiresKeyLanguage bool
	// AlreadyLinked: the schema is linked to the registration.
	AlreadyLinked bool
	// NewTypes are entity types none of the registration's other links
	// has.
	NewTypes []string
}

// Valid reports whether the contract projects.
func (p *Projected) Valid() bool { return p.Err == nil }

// Errors lists the reasons the projection failed.
func (p *Projected) Errors() []string {
	if p.Err == nil {
		return []string{}
	}
	return []string{projectionError(p.Err).Error()}
}

// StampedKeys are the database keys of the entity type.
func (p *Projected) StampedKeys() []StampedKeys {
	if p.Err != nil {
		return []StampedKeys{}
	}
	k := StampedKeys{EntityType: p.Map.EntityType, Source: "natural_keys", Keys: []string{}}
	for _, c := range p.Map.KeyColumns() {
		k.Keys = append(k.Keys, c.Source)
	}
	return []StampedKeys{k}
}

// project projects sc under d's options: its published contract, else its
// working copy.
func project(d *dbsync.Database, sc *schema.Schema) *Projected {
	out := &Projected{SchemaID: sc.ID, SchemaName: sc.Name, Published: sc.PublishedContent != nil}
	contract := json.RawMessage(sc.PublishedContent)
	if contract == nil {
		contract = sc.Content
	}
	if d.KeyLanguage == "" {
		d.KeyLanguage = sc.KeyLanguage
	}
	out.Map, out.Err = d.Projection(sc.ID, contract)
	out.RequiresKeyLanguage = errors.Is(out.Err, relmap.ErrKeyLanguage)
	if out.Err == nil {
		out.DDL = relmap.DDL(out.Map)
	}
	_, out.AlreadyLinked = d.Link(sc.ID)
	if out.Err == nil {
		out.NewTypes = []string{out.Map.EntityType}
		for _, l := range d.Links {
			if l.SchemaID != sc.ID && l.Shipped != nil && l.Shipped.EntityType == out.Map.EntityType {
				out.NewTypes = []string{}
			}
		}
	}
	return out
}

// defaultDatabase is a registration with every default, for the dry runs
// and the relational map of a schema without one.
func defaultDatabase() *dbsync.Database {
	name := "dry run"
	d, _ := dbsync.New("", "", dbsync.Fields{Name: &name}, time.Time{})
	return d
}

// ValidateCreate is a create's dry run on schemaID with the default
// options: what the registration's tables would be. Nothing changes.
func (s *DatabaseService) ValidateCreate(ctx context.Context, p *access.Principal, schemaID string) (*Projected, error) {
	return s.schemaProjection(ctx, p, access.ActValidateDatabase, schemaID)
}

// SchemaRelationalMap is a schema's projection with the default options.
func (s *DatabaseService) SchemaRelationalMap(ctx context.Context, p *access.Principal, schemaID string) (*Projected, error) {
	return s.schemaProjection(ctx, p, access.ActGetRelationalMap, schemaID)
}

func (s *DatabaseService) schemaProjection(ctx context.Context, p *access.Principal, a access.Action, schemaID string) (*Projected, error) {
	if err := access.Authorize(p, a); err != nil {
		return nil, err
	}
	if err := checkID(schemaID); err != nil {
		return nil, err
	}
	sc, err := liveSchema(ctx, s.Schemas, p.OrgID, schemaID)
	if err != nil {
		return nil, err
	}
	return project(defaultDatabase(), sc), nil
}

// ValidateLink is a link's dry run: schemaID's projection under the
// registration's options, beside its other links. Nothing changes.
func (s *DatabaseService) ValidateLink(ctx context.Context, p *access.Principal, id, schemaID string) (*Projected, error) {
	d, err := s.get(ctx, p, access.ActValidateDatabase, id)
	if err != nil {
		return nil, err
	}
	if err := checkID(schemaID); err != nil {
		return nil, err
	}
	sc, err := liveSchema(ctx, s.Schemas, p.OrgID, schemaID)
	if err != nil {
		return nil, err
	}
	_, linked := d.Link(schemaID)
	if !linked {
		d.Links = append(d.Links, dbsync.Link{SchemaID: schemaID})
	}
	out := project(d, sc)
	out.AlreadyLinked = linked
	return out, nil
}

// DatabaseRelationalMap is the projection of every linked schema under
// the registration's options, names kept from what each link shipped.
func (s *DatabaseService) DatabaseRelationalMap(ctx context.Context, p *access.Principal, id string) (*dbsync.Database, []*Projected, error) {
	d, err := s.get(ctx, p, access.ActGetRelationalMap, id)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*Projected, 0, len(d.Links))
	for _, l := range d.Links {
		sc, err := s.Schemas.GetSchema(ctx, p.OrgID, l.SchemaID)
		if err != nil {
			return nil, nil, err
		}
		pr := project(d, sc)
		if !pr.Published {
			// Nothing ships before a publish: no tables yet.
			pr.Map, pr.DDL = relmap.Map{Tables: []relmap.Table{}}, []string{}
		}
		out = append(out, pr)
	}
	return d, out, nil
}
