package access_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
)

func TestParseAuthorization(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"Bearer abc.def", "abc.def", true},
		{"bearer  ent_x ", "ent_x", true},
		{"Basic abc", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"Bearer a\x00", "", false},
		{"Bearer " + strings.Repeat("a", access.MaxCredentialLen+1), "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		is := is.New(t)
		got, err := access.ParseAuthorization(tt.in)
		if !tt.ok {
			is.True(errors.Is(err, access.ErrBadAuthorization))
			continue
		}
		is.NoErr(err)
		is.Equal(got, tt.want)
	}
}

func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer x", "bearer ent_abc", "Basic x", "Bearer  ", "Bearer a b", "Bearer \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, err := access.ParseAuthorization(h)
		if err != nil {
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") || len(tok) > access.MaxCredentialLen {
			t.Fatalf("accepted %q from %q", tok, h)
		}
	})
}

func TestThrottle(t *testing.T) {
	is := is.New(t)
	th := access.NewThrottle()
	now := time.Unix(1_000_000, 0)
	for i := 0; i < 4; i++ {
		is.Equal(th.Fail("a@x", "1.1.1.1", now), time.Duration(0))
		is.Equal(th.Check("a@x", "1.1.1.1", now), time.Duration(0))
	}
	is.Equal(th.Fail("a@x", "1.1.1.1", now), 30*time.Second)  // 5th failure locks
	is.Equal(th.Check("a@x", "2.2.2.2", now), 30*time.Second) // per account, from any IP
	is.Equal(th.Check("b@x", "1.1.1.1", now), time.Duration(0))
	later := now.Add(31 * time.Second)
	is.Equal(th.Check("a@x", "1.1.1.1", later), time.Duration(0))
	for i := 0; i < 5; i++ {
		th.Fail("a@x", "1.1.1.1", later)
	}
	is.Equal(th.Check("a@x", "1.1.1.1", later), time.Minute) // the lock doubles
	th.Succeed("a@x")
	is.Equal(th.Check("a@x", "3.3.3.3", later), time.Duration(0))

	// Per IP: 20 failures over many accounts lock the IP.
	ip := access.NewThrottle()
	for i := 0; i < 19; i++ {
		ip.Fail(string(rune('a'+i))+"@x", "9.9.9.9", now)
	}
	is.Equal(ip.Check("new@x", "9.9.9.9", now), time.Duration(0))
	ip.Fail("z@x", "9.9.9.9", now)
	is.Equal(ip.Check("new@x", "9.9.9.9", now), 30*time.Second)
	// Old failures fall out of the window.
	w := access.NewThrottle()
	for i := 0; i < 4; i++ {
		w.Fail("a@x", "1", now)
	}
	is.Equal(w.Fail("a@x", "1", now.Add(16*time.Minute)), time.Duration(0))
}

func TestApplyMemberChange(t *testing.T) {
	owner, editor := access.Owner, access.Editor
	deact, active := access.UserDeactivated, access.UserActive
	bad := access.Role("boss")
	tests := []struct {
		name   string
		target access.User
		change access.MemberChange
		owners int
		err    error
		want   access.User
	}{
		{"promote", access.User{ID: "u", Role: access.Operator, Status: active}, access.MemberChange{Role: &owner}, 1, nil, access.User{ID: "u", Role: owner, Status: active}},
		{"deactivate editor", access.User{ID: "u", Role: editor, Status: active}, access.MemberChange{Status: &deact}, 1, nil, access.User{ID: "u", Role: editor, Status: deact}},
		{"self", access.User{ID: "me", Role: editor, Status: active}, access.MemberChange{Role: &owner}, 2, access.ErrSelf, access.User{}},
		{"last owner demoted", access.User{ID: "u", Role: owner, Status: active}, access.MemberChange{Role: &editor}, 1, access.ErrLastOwner, access.User{}},
		{"last owner deactivated", access.User{ID: "u", Role: owner, Status: active}, access.MemberChange{Status: &deact}, 1, access.ErrLastOwner, access.User{}},
		{"one of two owners demoted", access.User{ID: "u", Role: owner, Status: active}, access.MemberChange{Role: &editor}, 2, nil, access.User{ID: "u", Role: editor, Status: active}},
		{"bad role", access.User{ID: "u", Role: editor, Status: active}, access.MemberChange{Role: &bad}, 2, errors.New(""), access.User{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			u := tt.target
			err := access.ApplyMemberChange("me", &u, tt.change, tt.owners)
			if tt.err != nil {
				is.True(err != nil)
				if tt.err.Error() != "" {
					is.True(errors.Is(err, tt.err))
				}
				is.Equal(u, tt.target) // unchanged
				return
			}
			is.NoErr(err)
			is.Equal(u, tt.want)
		})
	}
}
