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

func TestLoginThrottle(t *testing.T) {
	is := is.New(t)
	p := access.DefaultLoginThrottle()
	now := time.Unix(1_000_000, 0)
	for n := 0; n < 5; n++ {
		is.Equal(p.Delay(n), time.Duration(0)) // the first failures are free
	}
	is.Equal(p.Delay(5), time.Second)
	is.Equal(p.Delay(6), 2*time.Second)
	is.Equal(p.Delay(7), 4*time.Second)
	is.Equal(p.Delay(20), 15*time.Minute) // capped
	is.Equal(p.Delay(500), 15*time.Minute)
	f := access.LoginFailures{Count: 6, Last: now}
	is.Equal(p.Wait(f, now), 2*time.Second)
	is.Equal(p.Wait(f, now.Add(1500*time.Millisecond)), 500*time.Millisecond)
	is.Equal(p.Wait(f, now.Add(2*time.Second)), time.Duration(0))
	is.Equal(p.Wait(access.LoginFailures{Count: 4, Last: now}, now), time.Duration(0))
	// An hour without failures forgets them.
	long := access.LoginFailures{Count: 30, Last: now}
	is.Equal(p.Wait(long, now.Add(10*time.Minute)), 5*time.Minute)
	is.True(!p.Forgotten(long, now.Add(59*time.Minute)))
	is.True(p.Forgotten(long, now.Add(time.Hour)))
	is.Equal(p.Wait(long, now.Add(time.Hour)), time.Duration(0))
	// The key is per account and address together, and names neither.
	k := access.ThrottleKey("a@x", "127.0.0.2")
	is.True(k != access.ThrottleKey("a@x", "127.0.0.3"))
	is.True(k != access.ThrottleKey("b@x", "127.0.0.2"))
	is.True(!strings.Contains(k, "a@x") && !strings.Contains(k, "127.0.0.2"))
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
