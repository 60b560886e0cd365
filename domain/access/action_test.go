package access_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
)

func TestAuthorizeAction(t *testing.T) {
	rw := access.DefaultScopes()
	ro := []access.Scope{access.ScopeRead}
	p := func(r access.Role, scopes []access.Scope) *access.Principal {
		return &access.Principal{OrgID: "o", Role: r, Scopes: scopes}
	}
	operator, editor, owner := p(access.Operator, rw), p(access.Editor, rw), p(access.Owner, rw)
	readOnlyOwner := p(access.Owner, ro)
	admin := &access.Principal{OrgID: "o", Role: access.Operator, Scopes: rw, SysAdmin: true}
	tests := []struct {
		name string
		p    *access.Principal
		a    access.Action
		want error
	}{
		{"public without principal", nil, access.ActLogin, nil},
		{"no principal", nil, access.ActGetRecord, access.ErrUnauthenticated},
		{"no principal, unknown action", nil, access.Action("nope"), access.ErrUnauthenticated},
		{"anyone reads themselves", operator, access.ActMe, nil},
		{"anyone asks for a key", operator, access.ActCreateKey, nil},
		{"read-only key cannot ask for a key", readOnlyOwner, access.ActCreateKey, access.ErrForbidden},
		{"operator reads records", operator, access.ActListRecords, nil},
		{"operator enriches", operator, access.ActEnrich, nil},
		{"operator cancels", operator, access.ActCancelJob, nil},
		{"operator reads schemas", operator, access.ActGetSchema, nil},
		{"operator cannot create schemas", operator, access.ActCreateSchema, access.ErrForbidden},
		{"editor creates schemas", editor, access.ActCreateSchema, nil},
		{"operator cannot generate schemas", operator, access.ActGenerateSchema, access.ErrForbidden},
		{"editor generates schemas", editor, access.ActGenerateSchema, nil},
		{"operator cannot AI-edit schemas", operator, access.ActEditSchemaAI, access.ErrForbidden},
		{"editor AI-edits schemas", editor, access.ActEditSchemaAI, nil},
		{"operator checks samples", operator, access.ActCheckSamples, nil},
		{"read-only owner cannot check samples", readOnlyOwner, access.ActCheckSamples, access.ErrForbidden},
		{"operator cannot add members", operator, access.ActAddMember, access.ErrForbidden},
		{"operator cannot list members", operator, access.ActListMembers, access.ErrForbidden},
		{"editor cannot change members", editor, access.ActUpdateMember, access.ErrForbidden},
		{"editor cannot list keys", editor, access.ActListKeys, access.ErrForbidden},
		{"owner adds members", owner, access.ActAddMember, nil},
		{"owner revokes keys", owner, access.ActRevokeKey, nil},
		{"read-only owner lists members", readOnlyOwner, access.ActListMembers, nil},
		{"read-only owner cannot add members", readOnlyOwner, access.ActAddMember, access.ErrForbidden},
		{"read-only owner cannot enrich", readOnlyOwner, access.ActEnrich, access.ErrForbidden},
		{"owner is not sysadmin", owner, access.ActReadAPIDocs, access.ErrForbidden},
		{"sysadmin reads the docs", admin, access.ActReadAPIDocs, nil},
		{"sysadmin passes role checks", admin, access.ActUpdateMember, nil},
		{"editor cannot list provider keys", editor, access.ActListProviderKeys, access.ErrForbidden},
		{"owner adds provider keys", owner, access.ActCreateProviderKey, nil},
		{"read-only owner lists provider keys", readOnlyOwner, access.ActListProviderKeys, nil},
		{"read-only owner cannot test provider keys", readOnlyOwner, access.ActTestProviderKey, access.ErrForbidden},
		{"operator lists org providers (provider info)", operator, access.ActListOrgProviders, nil},
		{"operator reads an org provider (provider info)", operator, access.ActGetOrgProvider, nil},
		{"operator cannot change org providers", operator, access.ActUpdateOrgProvider, access.ErrForbidden},
		{"operator cannot test org providers", operator, access.ActTestOrgProvider, access.ErrForbidden},
		{"operator cannot list provider keys", operator, access.ActListProviderKeys, access.ErrForbidden},
		{"editor cannot create org providers", editor, access.ActCreateOrgProvider, access.ErrForbidden},
		{"owner creates org providers", owner, access.ActCreateOrgProvider, nil},
		{"owner discovers models", owner, access.ActDiscoverOrgProviderModels, nil},
		{"read-only owner reads org providers", readOnlyOwner, access.ActGetOrgProvider, nil},
		{"read-only owner cannot test org providers", readOnlyOwner, access.ActTestOrgProvider, access.ErrForbidden},
		{"owner cannot list global keys", owner, access.ActListGlobalKeys, access.ErrForbidden},
		{"owner cannot test all global keys", owner, access.ActTestAllGlobalKeys, access.ErrForbidden},
		{"sysadmin creates global keys", admin, access.ActCreateGlobalKey, nil},
		{"unknown action is refused", owner, access.Action("members.delete_all"), access.ErrForbidden},
		{"unknown action is refused to sysadmins", admin, access.Action("members.delete_all"), access.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := access.Authorize(tt.p, tt.a)
			if tt.want == nil {
				is.NoErr(err)
				return
			}
			is.True(errors.Is(err, tt.want))
		})
	}
}

// TestActionRules: every action has a category and a scope, and the
// category decides the minimum role.
func TestActionRules(t *testing.T) {
	is := is.New(t)
	as := access.Actions()
	is.True(len(as) > 0)
	for _, a := range as {
		is.True(a.Valid())
		is.True(a.Category() != "")
		is.True(a.Scope() == access.ScopeRead || a.Scope() == access.ScopeWrite)
	}
	is.True(!access.Action("nope").Valid())
	is.Equal(access.Action("nope").Category(), access.CatSysAdmin)
	min, ok := access.MinimumRole(access.ActUpdateMember.Category())
	is.True(ok)
	is.Equal(min, access.Owner)
}
