package quota_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/quota"
)

func TestCheck(t *testing.T) {
	now := time.Date(2026, 11, 28, 22, 30, 0, 0, time.UTC)
	limits := quota.Limits{CallsPerDay: 10, TokensPerDay: 1000}
	for _, tt := range []struct {
		name   string
		limits quota.Limits
		spent  quota.Spent
		code   string
	}{
		{"nothing spent", limits, quota.Spent{}, ""},
		{"one call left", limits, quota.Spent{Calls: 9, Tokens: 999}, ""},
		{"calls reached", limits, quota.Spent{Calls: 10}, quota.CodeCallsPerDay},
		{"calls past", limits, quota.Spent{Calls: 11, Tokens: 5000}, quota.CodeCallsPerDay},
		{"tokens reached", limits, quota.Spent{Calls: 1, Tokens: 1000}, quota.CodeTokensPerDay},
		{"unlimited calls", quota.Limits{TokensPerDay: 1000}, quota.Spent{Calls: 1 << 40}, ""},
		{"unlimited tokens", quota.Limits{CallsPerDay: 10}, quota.Spent{Tokens: 1 << 40}, ""},
		{"no quota", quota.Limits{}, quota.Spent{Calls: 1 << 40, Tokens: 1 << 40}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := quota.Check(tt.limits, tt.spent, now)
			if tt.code == "" {
				is.True(got == nil)
				return
			}
			is.True(got != nil)
			is.Equal(got.Code, tt.code)
			is.Equal(got.RetryAfter, 90*time.Minute) // until the next UTC midnight
		})
	}
}

func TestWindow(t *testing.T) {
	is := is.New(t)
	// A time in another zone falls in its UTC day.
	at := time.Date(2026, 11, 29, 1, 0, 0, 0, time.FixedZone("+3", 3*3600)) // 22:00 UTC on the 28th
	from, to := quota.Window(at)
	is.Equal(from, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	is.Equal(to, time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	is.True(quota.Limits{}.Unlimited())
	is.True(!quota.Limits{TokensPerDay: 1}.Unlimited())
}
