package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// TaskEmbedding is the ledger task of the semantic ids' embedding calls.
const TaskEmbedding = "semantic_embedding"

// ModelFor is the embedding model of a slice: the one named, else the
// organization's setting, else the server's default. A cleared setting
// turns semantic ids off (409 semantic_ids_disabled).
func (s *ConceptService) ModelFor(ctx context.Context, orgID, named string) (model.Key, error) {
	if named != "" {
		k, err := model.ParseKey(named)
		if err != nil {
			return model.Key{}, Invalid("embedding_model", "%s", err)
		}
		return k, nil
	}
	if s.Settings != nil {
		m, set, err := s.Settings.EmbeddingModel(ctx, orgID)
		if err != nil {
			return model.Key{}, err
		}
		if set && m == "" {
			return model.Key{}, coded(ports.ErrConflict, CodeSemanticDisabled,
				"semantic ids are off for this organization: set an embedding model (PUT /api/org-keys/embedding-model)")
		}
		if set {
			return model.ParseKey(m)
		}
	}
	return s.DefaultModel, nil
}

// Embed returns the vectors of texts in model mk and the tokens they cost,
// paid with the organization's key for the model's provider. A key the
// provider refuses leaves rotation and a rate-limited one rests, and the
// call moves on to the next usable key, as a run's chat calls do. Every
// call that reached the provider is charged to the usage ledger at the
// model's embedding price. A priced call is first asked of the spend
// guard (the operator's quotas: 429).
func (s *ConceptService) Embed(ctx context.Context, orgID string, mk model.Key, texts []string) ([][]float32, int, error) {
	info, err := s.embeddingModel(mk)
	if err != nil {
		return nil, 0, err
	}
	var cred *ports.Credential
	if s.Keys != nil {
		if cred, err = s.Keys.Pick(ctx, orgID, mk.Provider, "", nil); err != nil {
			return nil, 0, err
		}
	}
	var tried []string
	for switches := 0; ; switches++ {
		// A priced call is refused before it is made, as a chat call is:
		// the quota counts embedding tokens. A free one (the built-in
		// models) spends nothing.
		if info.Price != (model.Price{}) {
			if err := s.Guard.Check(ctx, SpendOf(orgID, cred)); err != nil {
				return nil, 0, err
			}
		}
		t0 := time.Now()
		resp, err := s.Embedder.Embed(ctx, ports.EmbedRequest{Model: mk, Texts: texts, Credential: cred})
		s.chargeEmbedding(ctx, orgID, info, cred, resp.InputTokens, err, time.Since(t0))
		if err == nil {
			return resp.Vectors, resp.InputTokens, nil
		}
		if !rotateAfter(ctx, s.Keys, s.Log, orgID, cred, err) || switches >= maxKeySwitches {
			return nil, resp.InputTokens, fmt.Errorf("embed with %s: %w", mk, err)
		}
		tried = append(tried, cred.KeyID)
		next, perr := s.Keys.Pick(ctx, orgID, mk.Provider, "", tried)
		if perr != nil || next == nil {
			return nil, resp.InputTokens, fmt.Errorf("embed with %s: %w", mk, err)
		}
		cred = next
	}
}

// rotateAfter tells rotation (keys) what the provider said of cred's failed
// call and whether another key may succeed where it failed: the embedder's
// and the identity judge's calls share it.
func rotateAfter(ctx context.Context, keys *KeyRing, log *slog.Logger, orgID string, cred *ports.Credential, err error) bool {
	if cred == nil || keys == nil || ctx.Err() != nil {
		return false
	}
	var rl *ports.RateLimitError
	switch {
	case errors.Is(err, ports.ErrLLMAuth):
		log.WarnContext(ctx, "provider refused a key: out of rotation", "key_id", cred.KeyID, "source", cred.Source)
		keys.Refused(ctx, orgID, cred)
	case errors.As(err, &rl):
		keys.Rest(ctx, orgID, cred, rl.RetryAfter)
	default:
		return false
	}
	return true
}

// embeddingModel is mk as the catalog prices it. With no catalog every
// model is free; a model the catalog refuses is 400 naming
// embedding_model, except one of an organization's own providers, which
// the catalog cannot know (free: the organization runs it).
func (s *ConceptService) embeddingModel(mk model.Key) (model.Info, error) {
	if s.Catalog == nil {
		return model.Info{Key: mk}, nil
	}
	info, err := s.Catalog.EmbeddingModel(mk)
	switch {
	case err == nil:
		return info, nil
	case errors.Is(err, ports.ErrUnknownModel) && s.Keys != nil && s.Keys.Endpoints != nil:
		return model.Info{Key: mk}, nil
	}
	return model.Info{}, Invalid("embedding_model", "%s cannot embed: %s", mk, err)
}

// chargeEmbedding records one embedding call in the ledger. A free call
// that counted nothing (the built-in models) leaves no entry: there is
// nothing to pay and the ladder embeds on every resolution.
func (s *ConceptService) chargeEmbedding(ctx context.Context, orgID string, info model.Info, cred *ports.Credential, tokens int,
	err error, took time.Duration) {
	if s.Usage == nil || errors.Is(err, ports.ErrUnknownModel) || errors.Is(err, rotation.ErrNoUsableKey) {
		return
	}
	cost := info.Price.Cost(tokens, 0)
	if err == nil && tokens == 0 && cost == 0 {
		return
	}
	e := usage.Entry{ID: s.IDs.NewID(), OrgID: orgID, Task: TaskEmbedding, Model: info.Key.String(), EmbeddingTokens: tokens,
		Cost: cost, EmbeddingCost: cost, LatencyMS: took.Milliseconds(), Outcome: usage.OK, CreatedAt: s.Clock.Now()}
	recordUsage(ctx, s.Usage, s.Log, e, cred, err)
}

// record completes e with the key that paid and how the call ended, and
// appends it; a ledger failure is logged (the call was made either way).
func recordUsage(ctx context.Context, ledger ports.UsageLedger, log *slog.Logger, e usage.Entry, cred *ports.Credential, err error) {
	if cred != nil {
		e.KeySource, e.KeyID = string(cred.Source), cred.KeyID
	}
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled):
		e.Outcome = "cancelled"
	case errors.Is(err, ports.ErrLLMAuth):
		e.Outcome = "key_refused"
	default:
		e.Outcome = string(classify(err))
	}
	if aerr := ledger.AppendUsage(context.WithoutCancel(ctx), []usage.Entry{e}); aerr != nil {
		log.WarnContext(ctx, "usage ledger: call not recorded", "org_id", e.OrgID, "task", e.Task, "err", aerr)
	}
}
