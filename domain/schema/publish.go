package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Classification is how far a publish reaches: neutral (annotations only),
// additive (structure added, removed or changed without touching data), or
// transform (data must be migrated: a re-key, a type change).
type Classification string

// The classifications of a publish diff.
const (
	Neutral   Classification = "neutral"
	Additive  Classification = "additive"
	Transform Classification = "transform"
)

// TransformKind names a data migration a publish ships (the reference's
// PublishTransform kinds; rename is not detected: a renamed property is
// one removed and one added).
type TransformKind string

// The transform kinds this service detects.
const (
	KeySet             TransformKind = "key_set"
	KeyMultilinguality TransformKind = "key_multilinguality"
	ColumnType         TransformKind = "column_type"
	Ownership          TransformKind = "ownership"
	SemanticIdentity   TransformKind = "semantic_identity"
	ItemOrder          TransformKind = "item_order"
)

// RootType names the root entity type in a diff; the others are the keys of
// the document's $defs.
const RootType = "root"

// PropertyChange is a property present on both sides whose own keywords
// (not its annotations, not its children) differ.
type PropertyChange struct {
	EntityType string
	Path       string
	Keywords   []string
}

// TransformChange is one data migration of a diff.
type TransformChange struct {
	Kind       TransformKind
	EntityType string
	Path       string
	Detail     string
}

// TableChange is what a publish adds to one entity type.
type TableChange struct {
	EntityType         string
	AddedColumns       []string
	AddedRelationships []string
}

// Diff is what publishing a working copy changes in the published contract.
// Paths are dotted and relative to their entity type (array items continue
// the array's path).
type Diff struct {
	Classification    Classification
	AddedTypes        []string
	RemovedTypes      []string
	AddedProperties   []string // qualified: "$defs.Type.path" outside the root
	RemovedProperties []string
	ChangedProperties []PropertyChange
	Changed           []TableChange
	RemovedColumns    map[string][]string
	Transforms        []TransformChange
}

// RequiresConfirm reports whether the diff ships a transform, which a
// publish must confirm.
func (d Diff) RequiresConfirm() bool { return len(d.Transforms) > 0 }

// annotations are keywords that change no output shape: an edit of only
// these is neutral.
var annotations = map[string]bool{
	"description": true, "title": true, "examples": true, "$comment": true, "property_order": true,
	"ambiguity": true, "identity_scoping": true, "database_key_reason": true, "shared_reason": true,
	"unique_reason": true, "deprecated": true, "readOnly": true, "writeOnly": true, "default": true,
	"x-expertiseDomains": true, "x-description": true,
}

// node is one property (or an entity type's top level, path "") of a document.
type node struct {
	entity, path string
	own          map[string]any // keywords without children and annotations
	raw          map[string]any
}

func (n node) qualified() string {
	if n.entity == RootType {
		return n.path
	}
	return "$defs." + n.entity + "." + n.path
}

func identifying(p map[string]any) bool {
	return p["identifying"] == true || p["database_key"] == true
}

// walk lists the nodes of a document by entity type and path.
func walk(doc map[string]any) (map[string]node, []string) {
	nodes := map[string]node{}
	var types []string
	visit := func(entity string, top map[string]any) {
		types = append(types, entity)
		nodes[entity+"\x00"] = node{entity: entity, own: ownKeywords(top, nil), raw: top}
		var props func(prefix string, obj map[string]any)
		props = func(prefix string, obj map[string]any) {
			ps, _ := obj["properties"].(map[string]any)
			req := map[string]bool{}
			if rl, ok := obj["required"].([]any); ok {
				for _, r := range rl {
					if s, ok := r.(string); ok {
						req[s] = true
					}
				}
			}
			for name, v := range ps {
				p, ok := v.(map[string]any)
				if !ok {
					continue
				}
				path := prefix + name
				nodes[entity+"\x00"+path] = node{entity: entity, path: path, own: ownKeywords(p, req[name]), raw: p}
				if _, ok := p["properties"]; ok {
					props(path+".", p)
				}
				if it, ok := p["items"].(map[string]any); ok {
					if _, ok := it["properties"]; ok {
						props(path+".", it)
					}
				}
			}
		}
		props("", top)
	}
	visit(RootType, doc)
	defs, _ := doc["$defs"].(map[string]any)
	for name, v := range defs {
		if d, ok := v.(map[string]any); ok {
			visit(name, d)
		}
	}
	sort.Strings(types[1:])
	return nodes, types
}

// ownKeywords are the keywords of a property that are neither annotations
// nor children; required (a bool, nil at an entity's top) is the parent's
// say. Array items' own keywords count as the array's ("items.type").
func ownKeywords(p map[string]any, required any) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		switch {
		case annotations[k] || k == "properties" || k == "$defs" || k == "required":
		case k == "items":
			if it, ok := v.(map[string]any); ok {
				for ik, iv := range it {
					if !annotations[ik] && ik != "properties" && ik != "required" {
						out["items."+ik] = iv
					}
				}
			} else {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	if required == true {
		out["$required"] = true
	}
	return out
}

// types is a property's JSON types without null, sorted; with its $ref and
// db_type, what a change of makes a column_type transform.
func typeOf(own map[string]any, prefix string) string {
	var ts []string
	switch t := own[prefix+"type"].(type) {
	case string:
		ts = append(ts, t)
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				ts = append(ts, s)
			}
		}
	}
	ts = slicesWithout(ts, "null")
	sort.Strings(ts)
	return fmt.Sprintf("%v|%v|%v|%v", ts, own[prefix+"$ref"], own[prefix+"db_type"], own[prefix+"format"])
}

func slicesWithout(in []string, drop string) []string {
	out := in[:0]
	for _, s := range in {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// Compare is the diff from the published contract (nil: never published,
// so everything is added and nothing transforms) to the working copy. It is
// pure: documents that do not decode compare as empty.
func Compare(published, working json.RawMessage) Diff {
	c := newComparison(published, working)
	c.compareTypes()
	c.compareProperties()
	c.compareRemovedProperties()
	c.compareEntityKeywords()
	c.compareKeySets()
	c.sortTransforms()
	c.classify()
	return c.d
}

// comparison is both sides of one Compare and the diff its aspects build.
type comparison struct {
	first              bool // never published
	oldNodes, newNodes map[string]node
	oldTypes, newTypes []string
	oldT, newT         map[string]bool
	d                  Diff
}

func newComparison(published, working json.RawMessage) *comparison {
	var oldDoc, newDoc map[string]any
	_ = json.Unmarshal(working, &newDoc)
	c := &comparison{first: published == nil, d: Diff{RemovedColumns: map[string][]string{}}}
	if !c.first {
		_ = json.Unmarshal(published, &oldDoc)
	}
	c.oldNodes, c.oldTypes = walk(oldDoc)
	c.newNodes, c.newTypes = walk(newDoc)
	if c.first {
		c.oldNodes, c.oldTypes = map[string]node{}, nil
	}
	c.oldT, c.newT = set(c.oldTypes), set(c.newTypes)
	return c
}

// compareTypes lists the entity types added and removed. On a first publish
// the root is not an added type: every contract has one.
func (c *comparison) compareTypes() {
	for _, t := range c.newTypes {
		if !c.oldT[t] && (t != RootType || !c.first) {
			c.d.AddedTypes = append(c.d.AddedTypes, t)
		}
	}
	for _, t := range c.oldTypes {
		if !c.newT[t] {
			c.d.RemovedTypes = append(c.d.RemovedTypes, t)
		}
	}
}

// compareProperties walks the working copy's properties: a new one adds a
// column or a relationship to its entity type's table; one on both sides may
// change keywords and need transforms.
func (c *comparison) compareProperties() {
	changes := map[string]*TableChange{}
	for _, k := range sortedKeys(c.newNodes) {
		n := c.newNodes[k]
		if n.path == "" {
			continue
		}
		o, ok := c.oldNodes[k]
		if !ok {
			c.d.AddedProperties = append(c.d.AddedProperties, n.qualified())
			tc := changes[n.entity]
			if tc == nil {
				tc = &TableChange{EntityType: n.entity}
				changes[n.entity] = tc
			}
			if isRef(n.raw) {
				tc.AddedRelationships = append(tc.AddedRelationships, n.path)
			} else {
				tc.AddedColumns = append(tc.AddedColumns, n.path)
			}
			continue
		}
		if kw := changedKeywords(o.own, n.own); len(kw) > 0 {
			c.d.ChangedProperties = append(c.d.ChangedProperties, PropertyChange{EntityType: n.entity, Path: n.path, Keywords: kw})
		}
		c.d.Transforms = append(c.d.Transforms, propertyTransforms(o, n)...)
	}
	for _, t := range c.newTypes {
		if tc := changes[t]; tc != nil {
			c.d.Changed = append(c.d.Changed, *tc)
		}
	}
}

// compareRemovedProperties lists the published properties the working copy
// drops; a column goes only where its entity type stays.
func (c *comparison) compareRemovedProperties() {
	for _, k := range sortedKeys(c.oldNodes) {
		o := c.oldNodes[k]
		if _, ok := c.newNodes[k]; ok || o.path == "" {
			continue
		}
		c.d.RemovedProperties = append(c.d.RemovedProperties, o.qualified())
		if c.newT[o.entity] {
			c.d.RemovedColumns[o.entity] = append(c.d.RemovedColumns[o.entity], o.path)
		}
	}
}

// compareEntityKeywords compares entity types' own keywords
// (additionalProperties, x-* routing...).
func (c *comparison) compareEntityKeywords() {
	for _, t := range c.newTypes {
		o, ok := c.oldNodes[t+"\x00"]
		if !ok {
			continue
		}
		if kw := changedKeywords(o.own, c.newNodes[t+"\x00"].own); len(kw) > 0 {
			c.d.ChangedProperties = append(c.d.ChangedProperties, PropertyChange{EntityType: t, Keywords: kw})
		}
	}
}

// compareKeySets finds re-keys: an entity type present on both sides whose
// set of identifying properties changed.
func (c *comparison) compareKeySets() {
	if c.first {
		return
	}
	for _, t := range c.newTypes {
		if !c.oldT[t] {
			continue
		}
		was, is := keySet(c.oldNodes, t), keySet(c.newNodes, t)
		if !reflect.DeepEqual(was, is) {
			c.d.Transforms = append(c.d.Transforms, TransformChange{Kind: KeySet, EntityType: t,
				Detail: fmt.Sprintf("identifying properties change from %v to %v", was, is)})
		}
	}
}

func (c *comparison) sortTransforms() {
	sort.Slice(c.d.Transforms, func(i, j int) bool {
		a, b := c.d.Transforms[i], c.d.Transforms[j]
		if a.EntityType != b.EntityType {
			return a.EntityType < b.EntityType
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Kind < b.Kind
	})
}

// classify names how far the diff reaches. A first publish is additive even
// when it lists nothing (a bare root): it creates the contract.
func (c *comparison) classify() {
	d := &c.d
	switch {
	case len(d.Transforms) > 0:
		d.Classification = Transform
	case len(d.AddedTypes)+len(d.RemovedTypes)+len(d.AddedProperties)+len(d.RemovedProperties)+len(d.ChangedProperties) > 0,
		c.first && len(c.newNodes) > 0:
		d.Classification = Additive
	default:
		d.Classification = Neutral
	}
}

func isRef(p map[string]any) bool {
	if _, ok := p["$ref"]; ok {
		return true
	}
	if it, ok := p["items"].(map[string]any); ok {
		_, ok := it["$ref"]
		return ok
	}
	return false
}

// propertyTransforms are the data migrations a change of one property
// needs.
func propertyTransforms(o, n node) []TransformChange {
	var out []TransformChange
	add := func(kind TransformKind, detail string, args ...any) {
		out = append(out, TransformChange{Kind: kind, EntityType: n.entity, Path: n.path, Detail: n.path + ": " + fmt.Sprintf(detail, args...)})
	}
	for _, prefix := range []string{"", "items."} {
		if was, is := typeOf(o.own, prefix), typeOf(n.own, prefix); was != is {
			add(ColumnType, "%stype changes from %s to %s", prefix, describeType(o.own, prefix), describeType(n.own, prefix))
		}
	}
	flag := func(k string) (bool, bool) { return o.raw[k] == true, n.raw[k] == true }
	if identifying(o.raw) && identifying(n.raw) {
		if was, is := flag("multilingual"); was != is {
			add(KeyMultilinguality, "the key property becomes %s", map[bool]string{true: "multilingual", false: "monolingual"}[is])
		}
	}
	if was, is := flag("shared"); was != is {
		add(Ownership, "shared changes from %v to %v", was, is)
	}
	if was, is := flag("semantic_id"); was != is {
		add(SemanticIdentity, "semantic_id changes from %v to %v", was, is)
	}
	if was, is := flag("ordered"); was != is {
		add(ItemOrder, "ordered changes from %v to %v", was, is)
	}
	return out
}

func describeType(own map[string]any, prefix string) string {
	var parts []string
	for _, k := range []string{"type", "$ref", "db_type", "format"} {
		if v, ok := own[prefix+k]; ok {
			b, _ := json.Marshal(v)
			parts = append(parts, k+"="+string(b))
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, " ")
}

func keySet(nodes map[string]node, entity string) []string {
	out := []string{}
	for _, n := range nodes {
		if n.entity == entity && n.path != "" && identifying(n.raw) {
			out = append(out, n.path)
		}
	}
	sort.Strings(out)
	return out
}

func changedKeywords(a, b map[string]any) []string {
	var out []string
	for k, v := range b {
		if w, ok := a[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// KeyIsMultilingual reports whether the document's database key (the
// root's identifying properties) has a multilingual property.
func KeyIsMultilingual(doc json.RawMessage) bool {
	var d map[string]any
	if json.Unmarshal(doc, &d) != nil {
		return false
	}
	nodes, _ := walk(d)
	for _, n := range nodes {
		if n.entity == RootType && n.path != "" && identifying(n.raw) && n.raw["multilingual"] == true {
			return true
		}
	}
	return false
}

// PublishOptions are a publish's confirmations.
type PublishOptions struct {
	// ConfirmTransforms acknowledges that the publish migrates data.
	ConfirmTransforms bool
	// KeyLanguage locks the language of multilingual database keys ("":
	// none given).
	KeyLanguage string
}

// Preview is what a publish would do: its diff and what blocks it.
type Preview struct {
	Diff                Diff
	State               PublishState
	RequiresConfirm     bool
	RequiresKeyLanguage bool
	// Blockers are the errors that refuse the publish (with these options);
	// empty when it can go ahead.
	Blockers []error
}

// CanPublish reports whether nothing blocks the publish.
func (p Preview) CanPublish() bool { return len(p.Blockers) == 0 }

// PreviewPublish is the dry run of Publish with opts: the diff from the
// published contract to the working copy and every blocker, in the order
// Publish checks them.
func (s *Schema) PreviewPublish(opts PublishOptions) Preview {
	p := Preview{Diff: Compare(s.PublishedContent, s.Content), State: s.PublishState()}
	p.RequiresConfirm = p.Diff.RequiresConfirm()
	p.RequiresKeyLanguage = s.KeyLanguage == "" && KeyIsMultilingual(s.Content)
	if !s.Linked {
		p.Blockers = append(p.Blockers, fmt.Errorf("schema %s is not linked to a database; a draft's edits take effect without a publish: %w", s.ID, ErrNotLinked))
	}
	if opts.KeyLanguage != "" && s.KeyLanguage != "" && opts.KeyLanguage != s.KeyLanguage {
		p.Blockers = append(p.Blockers, fmt.Errorf("the key language is locked to %q; it cannot change to %q: %w", s.KeyLanguage, opts.KeyLanguage, ErrKeyLanguageLocked))
	}
	if p.RequiresKeyLanguage && opts.KeyLanguage == "" {
		p.Blockers = append(p.Blockers, fmt.Errorf("the schema's database key is multilingual and no key language is locked; publish with key_language: %w", ErrKeyLanguageRequired))
	}
	if p.RequiresConfirm && !opts.ConfirmTransforms {
		kinds := []string{}
		for _, t := range p.Diff.Transforms {
			kinds = append(kinds, string(t.Kind)+" "+t.EntityType+"."+t.Path)
		}
		p.Blockers = append(p.Blockers, fmt.Errorf("the publish migrates data (%s); publish with confirm_transforms=true: %w", strings.Join(kinds, ", "), ErrConfirmTransforms))
	}
	return p
}

// Publish makes the working copy the published contract at now, and locks
// the key language when opts gives one. It returns the diff it published,
// or the first blocker of PreviewPublish.
func (s *Schema) Publish(now time.Time, opts PublishOptions) (Diff, error) {
	p := s.PreviewPublish(opts)
	if !p.CanPublish() {
		return p.Diff, p.Blockers[0]
	}
	if opts.KeyLanguage != "" {
		s.KeyLanguage = opts.KeyLanguage
	}
	s.PublishedContent = bytes.Clone(s.Content)
	s.PublishedHash = s.contentHash()
	t := now
	s.PublishedAt = &t
	s.UpdatedAt = now
	return p.Diff, nil
}
