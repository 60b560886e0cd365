package access

import "errors"

// Errors of member management.
var (
	ErrLastOwner = errors.New("the organization must keep at least one active owner")
	ErrSelf      = errors.New("you cannot deactivate yourself or change your own role")
)

// MemberChange is a requested change of a member; nil fields stay.
type MemberChange struct {
	Role   *Role
	Status *UserStatus
}

// ApplyMemberChange applies c to target as actor. Owners manage members
// (the route policy enforces the role); nobody changes themselves, and the
// last active owner can neither be demoted nor deactivated. activeOwners
// counts the organization's active owners before the change.
func ApplyMemberChange(actorID string, target *User, c MemberChange, activeOwners int) error {
	if target.ID == actorID {
		return ErrSelf
	}
	if c.Role != nil && !c.Role.Valid() {
		return errors.New("role must be owner, editor or operator")
	}
	if c.Status != nil && *c.Status != UserActive && *c.Status != UserDeactivated {
		return errors.New("status must be active or deactivated")
	}
	losesOwner := target.Role == Owner && target.Active() &&
		((c.Role != nil && *c.Role != Owner) || (c.Status != nil && *c.Status != UserActive))
	if losesOwner && activeOwners <= 1 {
		return ErrLastOwner
	}
	if c.Role != nil {
		target.Role = *c.Role
	}
	if c.Status != nil {
		target.Status = *c.Status
	}
	return nil
}
