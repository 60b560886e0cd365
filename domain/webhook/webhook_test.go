package webhook_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/webhook"
)

func TestSignVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event":"enrichment_result","data":{}}`)
	sig := webhook.Sign("s3cret", now, body)
	cases := []struct {
		name, secret, header string
		body                 []byte
		at                   time.Time
		want                 error
	}{
		{"good", "s3cret", sig, body, now, nil},
		{"good within tolerance", "s3cret", sig, body, now.Add(4 * time.Minute), nil},
		{"wrong secret", "other", sig, body, now, webhook.ErrBadSignature},
		{"body changed", "s3cret", sig, []byte(`{}`), now, webhook.ErrBadSignature},
		{"stale", "s3cret", sig, body, now.Add(6 * time.Minute), webhook.ErrStale},
		{"from the future", "s3cret", sig, body, now.Add(-6 * time.Minute), webhook.ErrStale},
		{"empty", "s3cret", "", body, now, webhook.ErrNoSignature},
		{"no v1", "s3cret", "t=1800000000", body, now, webhook.ErrNoSignature},
		{"second v1 matches", "s3cret", "t=1800000000,v1=00," + sig[len("t=1800000000,"):], body, now, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			err := webhook.Verify(c.secret, c.header, c.body, c.at, 0)
			is.True(errors.Is(err, c.want) || err == c.want)
		})
	}
	is.New(t).NoErr(webhook.Verify("s3cret", sig, body, now.Add(time.Hour), -1)) // time not checked
}

func TestRetry(t *testing.T) {
	is := is.New(t)
	r := webhook.Retry{Base: time.Second, Max: 10 * time.Second, MaxAttempts: 6}
	waits := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}
	now := time.Unix(0, 0)
	for i, w := range waits {
		at, ok := r.Next(i+1, now)
		is.True(ok)
		is.Equal(at.Sub(now), w)
	}
	_, ok := r.Next(6, now)
	is.True(!ok) // given up
	is.Equal(webhook.DefaultRetry.Wait(100), time.Hour)
}

func TestDebounce(t *testing.T) {
	is := is.New(t)
	d := webhook.DebounceOf(5, 30)
	t0 := time.Unix(1000, 0)
	is.Equal(d.At(t0, t0), t0.Add(5*time.Second))                                                 // one delta: quiet period
	is.Equal(d.At(t0, t0.Add(10*time.Second)), t0.Add(15*time.Second))                            // a burst: after the last
	is.Equal(d.At(t0, t0.Add(29*time.Second)), t0.Add(30*time.Second))                            // a steady stream: the cap
	is.Equal(webhook.DebounceOf(5, 0).At(t0, t0.Add(time.Hour)), t0.Add(time.Hour+5*time.Second)) // no cap
}

func TestNewSecret(t *testing.T) {
	is := is.New(t)
	a, b := webhook.NewSecret(), webhook.NewSecret()
	is.True(a != b)
	is.Equal(len(a), len("whsec_")+64)
}

func TestBody(t *testing.T) {
	is := is.New(t)
	is.Equal(string(webhook.Body(webhook.EnrichmentResult, []byte(`{"id":"r"}`))), `{"event":"enrichment_result","data":{"id":"r"}}`)
	is.Equal(string(webhook.Body(webhook.DeltasAvailable, nil)), `{"event":"deltas_available","data":{}}`)
}
