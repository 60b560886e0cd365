package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// plainCipher keeps keys as they are: the tests look at rotation, not at
// sealing.
type plainCipher struct{}

func (plainCipher) Seal(p []byte) ([]byte, error) { return p, nil }
func (plainCipher) Open(s []byte) ([]byte, error) { return s, nil }

// conceptRig is a ConceptService whose provider "oa" is fake, paid with
// the organization's stored keys.
type conceptRig struct {
	svc    *app.ConceptService
	fake   *fakeopenai.Server
	keys   *memory.ProviderKeyStore
	ledger *memory.UsageLedger
	reg    *llm.Registry
	ring   *app.KeyRing
}

const rigOrg = "org-embed"

// newConceptRig stores the organization's keys, the first named being the
// least recently used (picked first); the fake accepts good only.
func newConceptRig(t *testing.T, good string, secrets ...string) *conceptRig {
	t.Helper()
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys(strings.Split(good, ",")...)) // good: the keys it accepts, comma-separated
	reg, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{{Name: "oa", Type: "openai", BaseURL: fake.URL(),
		Models: []string{"judge-model"}}}, Prices: map[string]model.Price{"oa::judge-model": {InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}},
		Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	keys := memory.NewProviderKeyStore()
	for i, s := range secrets {
		used := now.Add(time.Duration(i-len(secrets)) * time.Hour)
		k := &rotation.Key{ID: "pk-" + s, OrgID: rigOrg, Provider: "oa", Name: s, Suffix: s[len(s)-4:], Sealed: []byte(s), Version: 1,
			Enabled: true, Health: rotation.Valid, LastUsedAt: &used, CreatedAt: now}
		if err := keys.CreateProviderKey(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	ring := &app.KeyRing{Keys: keys, Cipher: plainCipher{}, Providers: reg, Clients: reg, Clock: fixedClock{now}, Log: lg}
	ledger := memory.NewUsageLedger()
	cs := memory.NewConceptStore()
	svc := &app.ConceptService{Store: cs, Vectors: cs, Settings: memory.NewEmbeddingSettings(), Embedder: reg, Catalog: reg, Usage: ledger,
		Keys: ring, DefaultModel: llm.NgramModel, Clock: fixedClock{now}, IDs: &seqIDs{}, Log: lg}
	return &conceptRig{svc: svc, fake: fake, keys: keys, ledger: ledger, reg: reg, ring: ring}
}

func (r *conceptRig) usage(t *testing.T) []usage.Entry {
	t.Helper()
	es, err := r.ledger.ListUsage(context.Background(), rigOrg, time.Time{}, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestConceptEmbedChargesTheLedger(t *testing.T) {
	is := is.New(t)
	r := newConceptRig(t, "sk-good-key-0001", "sk-good-key-0001")
	mk := model.Key{Provider: "oa", Model: "text-embedding-3-small"}
	vecs, tokens, err := r.svc.Embed(context.Background(), rigOrg, mk, []string{"acme corporation", "globex"})
	is.NoErr(err)
	is.Equal(len(vecs), 2)
	is.Equal(len(vecs[0]), fakeopenai.EmbeddingDims)
	is.True(tokens > 0)
	es := r.usage(t)
	is.Equal(len(es), 1)
	e := es[0]
	is.Equal(e.Task, app.TaskEmbedding)
	is.Equal(e.Model, "oa::text-embedding-3-small")
	is.Equal(e.EmbeddingTokens, tokens) // what the fake reported
	is.Equal(e.InputTokens, 0)
	is.Equal(e.EmbeddingCost, model.Price{InputPerMTok: 20_000}.Cost(tokens, 0))
	is.Equal(e.Cost, e.EmbeddingCost)
	is.Equal(e.KeyID, "pk-sk-good-key-0001")
	is.Equal(e.Outcome, usage.OK)

	// The built-in model is free and counts nothing: no entry.
	_, _, err = r.svc.Embed(context.Background(), rigOrg, llm.NgramModel, []string{"acme"})
	is.NoErr(err)
	is.Equal(len(r.usage(t)), 1)
}

func TestConceptEmbedRotatesPastARefusedKey(t *testing.T) {
	is := is.New(t)
	// The revoked key is the least recently used: it is tried first.
	r := newConceptRig(t, "sk-good-key-0002", "sk-revoked-0001", "sk-good-key-0002")
	mk := model.Key{Provider: "oa", Model: "text-embedding-3-small"}
	_, tokens, err := r.svc.Embed(context.Background(), rigOrg, mk, []string{"acme"})
	is.NoErr(err)
	es := r.usage(t)
	is.Equal(len(es), 2)
	is.Equal(es[0].KeyID, "pk-sk-revoked-0001")
	is.Equal(es[0].Outcome, "key_refused")
	is.Equal(es[1].KeyID, "pk-sk-good-key-0002")
	is.Equal(es[1].EmbeddingTokens, tokens)
	k, err := r.keys.GetProviderKey(context.Background(), rigOrg, "pk-sk-revoked-0001")
	is.NoErr(err)
	is.Equal(k.Health, rotation.Invalid) // out of rotation

	// With no key left the provider's refusal stands.
	r = newConceptRig(t, "sk-good-key-0002", "sk-revoked-0001")
	_, _, err = r.svc.Embed(context.Background(), rigOrg, mk, []string{"acme"})
	is.True(err != nil)
}

func TestConceptEmbedRefusesANonEmbeddingModel(t *testing.T) {
	is := is.New(t)
	r := newConceptRig(t, "sk-good-key-0001", "sk-good-key-0001")
	_, _, err := r.svc.Embed(context.Background(), rigOrg, model.Key{Provider: "oa", Model: "judge-model"}, []string{"acme"})
	e, ok := app.AsError(err)
	is.True(ok)
	is.Equal(e.Field, "embedding_model")
	is.Equal(len(r.usage(t)), 0)
}

// refuseSpends refuses every spend it is asked about, and counts them.
type refuseSpends struct{ asked []app.Spend }

func (r *refuseSpends) CheckSpend(_ context.Context, s app.Spend) error {
	r.asked = append(r.asked, s)
	return &app.Error{Kind: app.ErrQuotaExceeded, Code: "quota_tokens_per_day", Detail: "refused"}
}

// TestConceptEmbedAsksTheSpendGuard: a priced embedding call is refused
// before it reaches the provider when the guard says no (nothing is
// charged), and a free one (the built-in model) is not asked about.
func TestConceptEmbedAsksTheSpendGuard(t *testing.T) {
	is := is.New(t)
	r := newConceptRig(t, "sk-good-key-0001", "sk-good-key-0001")
	guard := &refuseSpends{}
	r.svc.Guard = app.NewSpendGuard(guard)
	_, _, err := r.svc.Embed(context.Background(), rigOrg, model.Key{Provider: "oa", Model: "text-embedding-3-small"}, []string{"acme"})
	is.True(errors.Is(err, app.ErrQuotaExceeded))
	is.Equal(len(guard.asked), 1)
	is.Equal(guard.asked[0].OrgID, rigOrg)
	is.Equal(guard.asked[0].Operator, false) // the organization's own key pays
	is.Equal(len(r.usage(t)), 0)             // never called, never charged

	_, _, err = r.svc.Embed(context.Background(), rigOrg, llm.NgramModel, []string{"acme"})
	is.NoErr(err)
	is.Equal(len(guard.asked), 1)
}
