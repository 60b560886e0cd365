package access

import "time"

// Organization is a tenant. Every other object belongs to exactly one.
type Organization struct {
	ID        string
	Name      string
	CreatedAt time.Time
	// ModelDefaults are the organization's pinned default models by task
	// (enrichment, schema_generation, sample_generation): what auto
	// resolves to while the model can be called.
	ModelDefaults map[string]string
}

// UserStatus is whether a user may sign in.
type UserStatus string

const (
	UserActive      UserStatus = "active"
	UserDeactivated UserStatus = "deactivated"
)

// User is a member of one organization.
type User struct {
	ID           string
	OrgID        string
	Email        string
	PasswordHash string
	Role         Role
	Status       UserStatus
	SysAdmin     bool
	CreatedAt    time.Time
}

// Active reports whether the user may authenticate.
func (u *User) Active() bool { return u.Status == UserActive }

// RefreshToken is an issued refresh token; only its hash is stored. Tokens
// of one login form a family: each refresh uses one token and issues the next.
// Presenting a used token again means it was stolen, and revokes the family.
type RefreshToken struct {
	ID        string
	FamilyID  string
	UserID    string
	OrgID     string
	Hash      string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	RevokedAt *time.Time
	// AccessTokenID is the id (jti) of the access token issued with this
	// refresh token, and AccessExpiresAt its expiry: revoking the session
	// denies it (DeniedToken). Empty for tokens stored before ids were kept.
	AccessTokenID   string
	AccessExpiresAt time.Time
}
