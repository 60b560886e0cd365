// Package access holds who may do what: roles, scopes, the per-category
// minimum role table from SPEC.md, the rule of every action (use case), and
// the format and rules of access keys.
package access

import (
	"errors"
	"fmt"
	"time"
)

// Role is an organization role. Higher roles include the lower ones.
type Role string

const (
	Operator Role = "operator"
	Editor   Role = "editor"
	Owner    Role = "owner"
)

// Roles lists the organization roles from lowest to highest.
func Roles() []Role { return []Role{Operator, Editor, Owner} }

// level follows the reference product: Operator 1, Editor 2, Owner 4 (system
// administrators, 5, are a user flag, not an organization role).
func (r Role) level() int {
	switch r {
	case Operator:
		return 1
	case Editor:
		return 2
	case Owner:
		return 4
	}
	return 0
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r.level() > 0 }

// AtLeast reports whether r includes min.
func (r Role) AtLeast(min Role) bool { return r.Valid() && r.level() >= min.level() }

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", fmt.Errorf("unknown role %q (want operator, editor or owner)", s)
	}
	return r, nil
}

// Scope limits a key to reading or also modifying.
type Scope string

const (
	ScopeRead  Scope = "read"
	ScopeWrite Scope = "write"
)

// DefaultScopes is what a key carries when none are requested.
func DefaultScopes() []Scope { return []Scope{ScopeRead, ScopeWrite} }

// ParseScopes validates a list of scope names; an empty list gives the default.
func ParseScopes(names []string) ([]Scope, error) {
	if len(names) == 0 {
		return DefaultScopes(), nil
	}
	seen := map[Scope]bool{}
	var out []Scope
	for _, n := range names {
		s := Scope(n)
		if s != ScopeRead && s != ScopeWrite {
			return nil, fmt.Errorf("unknown scope %q (want read or write)", n)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// Errors of the access rules.
var (
	ErrUnauthenticated  = errors.New("missing or invalid credentials")
	ErrForbidden        = errors.New("insufficient role")
	ErrRoleAboveCreator = errors.New("a key cannot outrank its creator")
)

// Principal is the authenticated caller of one request.
type Principal struct {
	OrgID  string
	UserID string // empty for an organization access key
	KeyID  string // empty for a session token
	Role   Role
	Scopes []Scope
	// SysAdmin is the system-administrator flag of the user behind the
	// credential (never set for organization access keys).
	SysAdmin  bool
	ExpiresAt *time.Time
	// DatabaseID is set on the access token of a database credential: it
	// may do nothing but the feed actions (FeedActions) on this one
	// registration of OrgID (AuthorizeDatabase).
	DatabaseID string
}

// HasScope reports whether the principal carries scope s.
func (p Principal) HasScope(s Scope) bool {
	for _, have := range p.Scopes {
		if have == s {
			return true
		}
	}
	return false
}

// Category is an endpoint category of SPEC.md's minimum-role table.
type Category string

const (
	CatPublic        Category = "public" // login, registration, health
	CatAuthenticated Category = "authenticated"
	CatEnrichment    Category = "enrichment"
	CatRecords       Category = "records"
	CatSchemaRead    Category = "schema_read"
	CatSchemaWrite   Category = "schema_write"
	CatFusion        Category = "fusion"
	CatProviderInfo  Category = "provider_info"
	CatCostAnalytics Category = "cost_analytics"
	CatAPIKeys       Category = "api_keys"
	CatUsers         Category = "users"
	CatSchemaPurge   Category = "schema_purge"
	CatConceptMint   Category = "concept_mint"
	// Semantic concepts (issue 30): reads (list, get, neighbours, types,
	// probe, review, duplicates, impacts) are operators', edits (create,
	// aliases, canonical, delete) editors'; minting imports, merges and
	// clearing whole types owners' (CatConceptMint).
	CatConcepts    Category = "concepts"
	CatConceptRead Category = "concept_read"
	// Database sync (issue 28; SPEC.md's table has no rows for it):
	// registrations, links, webhooks and subscriptions are edited by editors;
	// the feed, snapshots, checksums and entity state are read by operators
	// (acks and quarantine actions also need the write scope); deletes and
	// the webhook secret are for owners.
	CatDatabases     Category = "databases"
	CatDatabaseFeed  Category = "database_feed"
	CatDatabaseOwner Category = "database_owner"
	// Attachments (issue 29; SPEC.md's table has no rows for them):
	// uploading and deleting are editors', reading (download, list,
	// metadata, verify) operators'.
	CatAttachments    Category = "attachments"
	CatAttachmentRead Category = "attachment_read"
	// CatSettings is the organization's settings (its pinned default
	// models): SPEC.md's table has no row; owners, like users and keys.
	CatSettings Category = "settings"
	CatSysAdmin Category = "sysadmin"
)

// minimum is SPEC.md's "Minimum role per endpoint category" table.
var minimum = map[Category]Role{
	CatEnrichment:    Operator,
	CatRecords:       Operator,
	CatSchemaRead:    Operator,
	CatSchemaWrite:   Editor,
	CatFusion:        Operator,
	CatProviderInfo:  Operator,
	CatCostAnalytics: Operator,
	CatAPIKeys:       Owner,
	CatUsers:         Owner,
	CatSchemaPurge:   Owner,
	CatConceptMint:   Owner,
	CatConcepts:      Editor,
	CatConceptRead:   Operator,
	CatDatabases:     Editor,
	CatDatabaseFeed:  Operator,
	CatDatabaseOwner: Owner,
	CatSettings:      Owner,

	CatAttachments:    Editor,
	CatAttachmentRead: Operator,
}

// MinimumRole returns the minimum role of a category, and false when the
// category has none (public, any authenticated caller, or sysadmin-only).
func MinimumRole(c Category) (Role, bool) {
	r, ok := minimum[c]
	return r, ok
}

// AuthorizeCategory decides whether p may do something of category c that
// needs scope need. It returns nil, ErrUnauthenticated or ErrForbidden
// (wrapped with detail). Use cases call Authorize with their Action.
func AuthorizeCategory(p *Principal, c Category, need Scope) error {
	if c == CatPublic {
		return nil
	}
	if p == nil {
		return ErrUnauthenticated
	}
	if !p.HasScope(need) {
		return fmt.Errorf("%w: this credential lacks the %s scope", ErrForbidden, need)
	}
	if c == CatSysAdmin {
		if !p.SysAdmin {
			return fmt.Errorf("%w: system administrators only", ErrForbidden)
		}
		return nil
	}
	if p.SysAdmin {
		return nil
	}
	min, ok := minimum[c]
	if !ok {
		return nil
	}
	if !p.Role.AtLeast(min) {
		return fmt.Errorf("%w: %s role or higher required, caller is %s", ErrForbidden, min, p.Role)
	}
	return nil
}
