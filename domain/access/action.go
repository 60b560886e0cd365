package access

import (
	"fmt"
	"sort"
)

// Action is one operation a caller asks of the service: a use case, not a
// route. Its rule, the category of SPEC.md's minimum-role table and the scope
// it needs, is written once here. The use cases check it (Authorize), so that
// every surface (HTTP, the embedded library, later ones) is held to the same
// rule; the HTTP adapter maps its routes to actions and refuses early by the
// same rule.
type Action string

// Actions of the service. Reading actions need the read scope, the others
// the write scope.
const (
	// Public actions need no credential.
	ActCheckHealth Action = "health.check"
	ActRegister    Action = "auth.register"
	ActLogin       Action = "auth.login"
	ActRefresh     Action = "auth.refresh"
	// ActLogout is public because the refresh token is the credential.
	ActLogout Action = "auth.logout"

	// ActMe and ActCreateKey are open to any authenticated caller. Creating
	// an organization key also needs the owner role and a role no higher than
	// the creator's (the key rules, CheckKeyRole); a user may always make
	// their own legacy key.
	ActMe        Action = "auth.me"
	ActCreateKey Action = "keys.create"

	// Key and member management is for owners.
	ActListKeys     Action = "keys.list"
	ActSetKeyRole   Action = "keys.set_role"
	ActRevokeKey    Action = "keys.revoke"
	ActListMembers  Action = "members.list"
	ActAddMember    Action = "members.add"
	ActUpdateMember Action = "members.update"
	// Invitations to register (ENRICH_REGISTRATION=invite) are member
	// management: owners, into their own organization; a system
	// administrator may also invite a new organization.
	ActCreateInvitation Action = "invitations.create"
	ActListInvitations  Action = "invitations.list"
	ActRevokeInvitation Action = "invitations.revoke"

	ActListSchemas  Action = "schemas.list"
	ActGetSchema    Action = "schemas.get"
	ActCreateSchema Action = "schemas.create"
	// ActAnalyzeSample judges a sample's property names (a model call and
	// a stored record: editor); ActAnalyzeSchema writes the verdicts into a
	// saved schema (an edit); ActScopingSplit is a free, stateless
	// transformation of the caller's own data (schema read).
	ActAnalyzeSample Action = "schemas.analyze_sample"
	ActAnalyzeSchema Action = "schemas.analyze"
	ActScopingSplit  Action = "schemas.scoping_split"
	// The saved-schema lifecycle: edits, the trash, duplicates, publishing
	// (its dry run too: a POST, so it needs the write scope), and the
	// owner-only purge of a schema's enrichment data.
	ActUpdateSchema       Action = "schemas.update"
	ActDeleteSchema       Action = "schemas.delete"
	ActRestoreSchema      Action = "schemas.restore"
	ActListDeletedSchemas Action = "schemas.list_deleted"
	ActDuplicateSchema    Action = "schemas.duplicate"
	ActPublishSchema      Action = "schemas.publish"
	ActValidatePublish    Action = "schemas.publish_validate"
	ActLinkSchema         Action = "schemas.link"
	ActPurgeSchemaData    Action = "schemas.purge_enrichment_data"
	// ActGenerateSamples generates sample objects (schema authoring).
	ActGenerateSamples Action = "schemas.generate_samples"
	// ActGenerateSchema generates a schema from samples (and saves it);
	// ActEditSchemaAI applies a natural-language edit to a saved schema:
	// both create or edit schemas. ActCheckSamples is the free, stateless
	// dry check of a sample set, open to whoever may read schemas.
	ActGenerateSchema Action = "schemas.generate"
	ActEditSchemaAI   Action = "schemas.ai_edit"
	ActCheckSamples   Action = "schemas.check_samples"

	ActListRecords Action = "records.list"
	ActGetRecord   Action = "records.get"
	// ActDeleteRecords soft-deletes records (SPEC.md: records delete is
	// operator); ActHardDeleteRecords removes them for good, which the
	// reference keeps for administrators: here the organization's owners,
	// like the purge of a schema's enrichment data.
	ActDeleteRecords     Action = "records.delete"
	ActHardDeleteRecords Action = "records.hard_delete"
	// ActFetchEntities fetches a batch's entities from a URL (enrichment).
	ActFetchEntities Action = "batch.fetch"

	ActEnrichmentOptions Action = "enrichment.options"
	// ActEnrich starts an enrichment job (streamed or waited for).
	ActEnrich Action = "enrichment.start"
	// ActStartBatch starts a batch enrichment job (operator, like ActEnrich).
	ActStartBatch Action = "enrichment.batch_start"
	// ActFollowJob reads a job and its events.
	ActFollowJob   Action = "jobs.follow"
	ActCancelJob   Action = "jobs.cancel"
	ActContinueJob Action = "jobs.continue"

	// The organization's own LLM provider keys are API key management:
	// owners only (SPEC.md's table).
	ActListProviderKeys  Action = "provider_keys.list"
	ActCreateProviderKey Action = "provider_keys.create"
	ActUpdateProviderKey Action = "provider_keys.update"
	ActDeleteProviderKey Action = "provider_keys.delete"
	ActEnableProviderKey Action = "provider_keys.enable"
	ActTestProviderKey   Action = "provider_keys.test"

	// An organization's own providers (its OpenAI-compatible endpoints
	// and their models): reading them is SPEC.md's "provider info"
	// (operators; the reads show no key, and the key's last characters to
	// owners only), changing them carries provider keys: owners only, like
	// them.
	ActListOrgProviders          Action = "org_providers.list"
	ActGetOrgProvider            Action = "org_providers.get"
	ActCreateOrgProvider         Action = "org_providers.create"
	ActUpdateOrgProvider         Action = "org_providers.update"
	ActDeleteOrgProvider         Action = "org_providers.delete"
	ActAddOrgProviderModel       Action = "org_providers.add_model"
	ActTestOrgProvider           Action = "org_providers.test"
	ActDiscoverOrgProviderModels Action = "org_providers.discover_models"

	// Global keys are for system administrators only (SPEC rule 6).
	ActListGlobalKeys    Action = "global_keys.list"
	ActCreateGlobalKey   Action = "global_keys.create"
	ActUpdateGlobalKey   Action = "global_keys.update"
	ActDeleteGlobalKey   Action = "global_keys.delete"
	ActEnableGlobalKey   Action = "global_keys.enable"
	ActTestGlobalKey     Action = "global_keys.test"
	ActTestAllGlobalKeys Action = "global_keys.test_all"

	// ActGetModelDefaults reads the organization's pinned default models;
	// ActSetModelDefaults changes them (an organization setting: owners).
	ActGetModelDefaults Action = "model_defaults.get"
	ActSetModelDefaults Action = "model_defaults.set"

	// ActViewCosts reads the organization's cost analytics (the usage
	// ledger's totals); ActViewAllCosts reads another organization's or
	// every organization's (system administrators).
	ActViewCosts    Action = "costs.view"
	ActViewAllCosts Action = "costs.view_all"

	// ActReadAllRecords reads and lists every organization's records;
	// ActDeleteAllRecords deletes them (the reference's all_orgs, for
	// system administrators).
	ActReadAllRecords   Action = "records.read_all"
	ActDeleteAllRecords Action = "records.delete_all"

	// ActReadAPIDocs reads the OpenAPI document and the interactive docs
	// (SPEC rule 5: system administrators only).
	ActReadAPIDocs Action = "docs.read"

	// ActFusionMerge merges stored records into a fused record
	// (POST /api/fusion/merge and /merge/stream).
	ActFusionMerge Action = "fusion.merge"

	// Database sync. Registrations, links, the validate dry runs, the
	// relational map, link webhooks, the credential and schema event
	// subscriptions: editor.
	ActListDatabases      Action = "databases.list"
	ActGetDatabase        Action = "databases.get"
	ActCreateDatabase     Action = "databases.create"
	ActUpdateDatabase     Action = "databases.update"
	ActValidateDatabase   Action = "databases.validate"
	ActLinkDatabase       Action = "databases.link"
	ActUnlinkDatabase     Action = "databases.unlink"
	ActSetDatabaseWebhook Action = "databases.set_webhook"
	ActGetCredential      Action = "databases.credential_get"
	ActCreateCredential   Action = "databases.credential_create"
	ActListSubscriptions  Action = "subscriptions.list"
	ActCreateSubscription Action = "subscriptions.create"
	ActDeleteSubscription Action = "subscriptions.delete"
	ActGetRelationalMap   Action = "databases.relational_map"
	ActMigrateProjection  Action = "databases.migrate_projection"
	ActSyncRecordsToDB    Action = "databases.sync_records"
	// Reading the feed, snapshots, checksums, summaries and entity state:
	// operator. Acks and quarantine actions: operator with the write scope.
	ActReadChanges      Action = "feed.read"
	ActClaimChanges     Action = "feed.claim"
	ActAckChanges       Action = "feed.ack"
	ActReadSnapshot     Action = "feed.snapshot"
	ActReadChecksum     Action = "feed.checksum"
	ActReadFeedSummary  Action = "feed.summary"
	ActListEntities     Action = "feed.entities"
	ActListQuarantine   Action = "feed.quarantine_list"
	ActReportQuarantine Action = "feed.quarantine_report"
	ActActOnQuarantine  Action = "feed.quarantine_act"
	ActClearAcked       Action = "feed.clear_acked"
	// Deletes (registration, link, credential) and the webhook secret:
	// owner.
	ActDeleteDatabase   Action = "databases.delete"
	ActDeleteCredential Action = "databases.credential_delete"
	ActGetWebhookSecret Action = "databases.webhook_secret"
	// Attachments: upload and delete are editors' (with the write scope);
	// download, list, metadata and verify operators' (metadata and verify
	// are POSTs, so they need the write scope like every POST). The
	// administrator's policies per media type are system administrators'.
	ActUploadAttachment         Action = "attachments.upload"
	ActDeleteAttachment         Action = "attachments.delete"
	ActReadAttachment           Action = "attachments.read"
	ActListAttachments          Action = "attachments.list"
	ActDescribeAttachments      Action = "attachments.describe"
	ActListAttachmentPolicies   Action = "attachments.policies_list"
	ActUpdateAttachmentPolicies Action = "attachments.policies_update"
	// Semantic concepts (issue 30): GET reads; probe and delete-impact
	// read too but are POSTs (the write scope); create, aliases,
	// canonical and delete edit; a delete that clears whole types without
	// naming ids is the owner's.
	ActReadConcepts      Action = "concepts.read"
	ActProbeConcepts     Action = "concepts.probe"
	ActEditConcepts      Action = "concepts.edit"
	ActClearConceptTypes Action = "concepts.clear_types"
	// Concept merge (issue 30): the impact is an operator's read (a POST,
	// so with the write scope); the merge is the owner's, as minting.
	ActConceptMergeImpact Action = "semantic_concepts.merge_impact"
	ActConceptMerge       Action = "semantic_concepts.merge"
	// Semantic concepts' import and export (issue 30): an import that only
	// reports is an edit (editor, write scope: it may call the judge); one
	// that mints also needs ActMintConcepts (owner); the export is a read.
	ActImportConcepts Action = "concepts.import"
	ActMintConcepts   Action = "concepts.mint"
	ActExportConcepts Action = "concepts.export"

	// The embedding-model migration of the semantic concepts (issue 30):
	// status and preview are operators' (a preview pays for its sample's
	// embeddings, so it needs the write scope); start and cancel move the
	// whole vocabulary, so they are owners'.
	ActConceptMigrationStatus  Action = "semantic_concepts.migration_status"
	ActConceptMigrationPreview Action = "semantic_concepts.migration_preview"
	ActConceptMigrationStart   Action = "semantic_concepts.migration_start"
	ActConceptMigrationCancel  Action = "semantic_concepts.migration_cancel"
	// The organization's embedding-model setting: reading it is an
	// operator's; setting it decides which model every concept is embedded
	// by (or turns semantic ids off), so it is the owner's.
	ActGetEmbeddingModel Action = "semantic_concepts.embedding_model_get"
	ActSetEmbeddingModel Action = "semantic_concepts.embedding_model_set"
	// ActExchangeCredential exchanges a database credential's refresh
	// token for an access token: public (the token is the credential).
	ActExchangeCredential Action = "databases.credential_exchange"
)

type rule struct {
	cat   Category
	scope Scope
}

var rules = map[Action]rule{
	ActCheckHealth: {CatPublic, ScopeRead},
	ActRegister:    {CatPublic, ScopeWrite},
	ActLogin:       {CatPublic, ScopeWrite},
	ActRefresh:     {CatPublic, ScopeWrite},
	ActLogout:      {CatPublic, ScopeWrite},

	ActMe:        {CatAuthenticated, ScopeRead},
	ActCreateKey: {CatAuthenticated, ScopeWrite},

	ActListKeys:     {CatAPIKeys, ScopeRead},
	ActSetKeyRole:   {CatAPIKeys, ScopeWrite},
	ActRevokeKey:    {CatAPIKeys, ScopeWrite},
	ActListMembers:  {CatUsers, ScopeRead},
	ActAddMember:    {CatUsers, ScopeWrite},
	ActUpdateMember: {CatUsers, ScopeWrite},

	ActCreateInvitation: {CatUsers, ScopeWrite},
	ActListInvitations:  {CatUsers, ScopeRead},
	ActRevokeInvitation: {CatUsers, ScopeWrite},

	ActListSchemas:     {CatSchemaRead, ScopeRead},
	ActGetSchema:       {CatSchemaRead, ScopeRead},
	ActCreateSchema:    {CatSchemaWrite, ScopeWrite},
	ActGenerateSamples: {CatSchemaWrite, ScopeWrite},

	ActAnalyzeSample:      {CatSchemaWrite, ScopeWrite},
	ActAnalyzeSchema:      {CatSchemaWrite, ScopeWrite},
	ActScopingSplit:       {CatSchemaRead, ScopeWrite},
	ActUpdateSchema:       {CatSchemaWrite, ScopeWrite},
	ActDeleteSchema:       {CatSchemaWrite, ScopeWrite},
	ActRestoreSchema:      {CatSchemaWrite, ScopeWrite},
	ActListDeletedSchemas: {CatSchemaRead, ScopeRead},
	ActDuplicateSchema:    {CatSchemaWrite, ScopeWrite},
	ActPublishSchema:      {CatSchemaWrite, ScopeWrite},
	ActValidatePublish:    {CatSchemaWrite, ScopeWrite},
	ActLinkSchema:         {CatSchemaWrite, ScopeWrite},
	ActPurgeSchemaData:    {CatSchemaPurge, ScopeWrite},

	ActGenerateSchema: {CatSchemaWrite, ScopeWrite},
	ActEditSchemaAI:   {CatSchemaWrite, ScopeWrite},
	ActCheckSamples:   {CatSchemaRead, ScopeWrite},

	ActListRecords: {CatRecords, ScopeRead},
	ActGetRecord:   {CatRecords, ScopeRead},

	ActDeleteRecords:     {CatRecords, ScopeWrite},
	ActHardDeleteRecords: {CatSchemaPurge, ScopeWrite},
	ActFetchEntities:     {CatEnrichment, ScopeWrite},

	ActEnrichmentOptions: {CatEnrichment, ScopeRead},
	ActEnrich:            {CatEnrichment, ScopeWrite},
	ActStartBatch:        {CatEnrichment, ScopeWrite},
	ActFollowJob:         {CatEnrichment, ScopeRead},
	ActCancelJob:         {CatEnrichment, ScopeWrite},
	ActContinueJob:       {CatEnrichment, ScopeWrite},

	ActListProviderKeys:  {CatAPIKeys, ScopeRead},
	ActCreateProviderKey: {CatAPIKeys, ScopeWrite},
	ActUpdateProviderKey: {CatAPIKeys, ScopeWrite},
	ActDeleteProviderKey: {CatAPIKeys, ScopeWrite},
	ActEnableProviderKey: {CatAPIKeys, ScopeWrite},
	ActTestProviderKey:   {CatAPIKeys, ScopeWrite},

	ActListOrgProviders:          {CatProviderInfo, ScopeRead},
	ActGetOrgProvider:            {CatProviderInfo, ScopeRead},
	ActCreateOrgProvider:         {CatAPIKeys, ScopeWrite},
	ActUpdateOrgProvider:         {CatAPIKeys, ScopeWrite},
	ActDeleteOrgProvider:         {CatAPIKeys, ScopeWrite},
	ActAddOrgProviderModel:       {CatAPIKeys, ScopeWrite},
	ActTestOrgProvider:           {CatAPIKeys, ScopeWrite},
	ActDiscoverOrgProviderModels: {CatAPIKeys, ScopeWrite},

	ActListGlobalKeys:    {CatSysAdmin, ScopeRead},
	ActCreateGlobalKey:   {CatSysAdmin, ScopeWrite},
	ActUpdateGlobalKey:   {CatSysAdmin, ScopeWrite},
	ActDeleteGlobalKey:   {CatSysAdmin, ScopeWrite},
	ActEnableGlobalKey:   {CatSysAdmin, ScopeWrite},
	ActTestGlobalKey:     {CatSysAdmin, ScopeWrite},
	ActTestAllGlobalKeys: {CatSysAdmin, ScopeWrite},

	ActGetModelDefaults: {CatProviderInfo, ScopeRead},
	ActSetModelDefaults: {CatSettings, ScopeWrite},

	ActViewCosts:    {CatCostAnalytics, ScopeRead},
	ActViewAllCosts: {CatSysAdmin, ScopeRead},

	ActReadAllRecords:   {CatSysAdmin, ScopeRead},
	ActDeleteAllRecords: {CatSysAdmin, ScopeWrite},

	ActReadAPIDocs: {CatSysAdmin, ScopeRead},
	ActFusionMerge: {CatFusion, ScopeWrite},

	ActListDatabases:      {CatDatabases, ScopeRead},
	ActGetDatabase:        {CatDatabases, ScopeRead},
	ActCreateDatabase:     {CatDatabases, ScopeWrite},
	ActUpdateDatabase:     {CatDatabases, ScopeWrite},
	ActValidateDatabase:   {CatDatabases, ScopeWrite},
	ActLinkDatabase:       {CatDatabases, ScopeWrite},
	ActUnlinkDatabase:     {CatDatabases, ScopeWrite},
	ActSetDatabaseWebhook: {CatDatabases, ScopeWrite},
	ActGetCredential:      {CatDatabases, ScopeRead},
	ActCreateCredential:   {CatDatabases, ScopeWrite},
	ActListSubscriptions:  {CatDatabases, ScopeRead},
	ActCreateSubscription: {CatDatabases, ScopeWrite},
	ActDeleteSubscription: {CatDatabases, ScopeWrite},
	ActGetRelationalMap:   {CatDatabases, ScopeRead},
	ActMigrateProjection:  {CatDatabases, ScopeWrite},
	ActSyncRecordsToDB:    {CatDatabases, ScopeWrite},

	ActReadChanges:      {CatDatabaseFeed, ScopeRead},
	ActClaimChanges:     {CatDatabaseFeed, ScopeWrite},
	ActAckChanges:       {CatDatabaseFeed, ScopeWrite},
	ActReadSnapshot:     {CatDatabaseFeed, ScopeRead},
	ActReadChecksum:     {CatDatabaseFeed, ScopeRead},
	ActReadFeedSummary:  {CatDatabaseFeed, ScopeRead},
	ActListEntities:     {CatDatabaseFeed, ScopeRead},
	ActListQuarantine:   {CatDatabaseFeed, ScopeRead},
	ActReportQuarantine: {CatDatabaseFeed, ScopeWrite},
	ActActOnQuarantine:  {CatDatabaseFeed, ScopeWrite},
	ActClearAcked:       {CatDatabaseFeed, ScopeWrite},

	ActDeleteDatabase:   {CatDatabaseOwner, ScopeWrite},
	ActDeleteCredential: {CatDatabaseOwner, ScopeWrite},
	ActGetWebhookSecret: {CatDatabaseOwner, ScopeRead},

	ActExchangeCredential: {CatPublic, ScopeWrite},

	ActUploadAttachment:         {CatAttachments, ScopeWrite},
	ActDeleteAttachment:         {CatAttachments, ScopeWrite},
	ActReadAttachment:           {CatAttachmentRead, ScopeRead},
	ActListAttachments:          {CatAttachmentRead, ScopeRead},
	ActDescribeAttachments:      {CatAttachmentRead, ScopeWrite},
	ActListAttachmentPolicies:   {CatSysAdmin, ScopeRead},
	ActUpdateAttachmentPolicies: {CatSysAdmin, ScopeWrite},

	ActReadConcepts:            {CatConceptRead, ScopeRead},
	ActProbeConcepts:           {CatConceptRead, ScopeWrite},
	ActEditConcepts:            {CatConcepts, ScopeWrite},
	ActClearConceptTypes:       {CatConceptMint, ScopeWrite},
	ActConceptMergeImpact:      {CatConceptRead, ScopeWrite},
	ActConceptMerge:            {CatConceptMint, ScopeWrite},
	ActImportConcepts:          {CatConcepts, ScopeWrite},
	ActMintConcepts:            {CatConceptMint, ScopeWrite},
	ActExportConcepts:          {CatConceptRead, ScopeRead},
	ActConceptMigrationStatus:  {CatConceptRead, ScopeRead},
	ActConceptMigrationPreview: {CatConceptRead, ScopeWrite},
	ActConceptMigrationStart:   {CatConceptMint, ScopeWrite},
	ActConceptMigrationCancel:  {CatConceptMint, ScopeWrite},
	ActGetEmbeddingModel:       {CatConceptRead, ScopeRead},
	ActSetEmbeddingModel:       {CatConceptMint, ScopeWrite},
}

// FeedActions are what a database credential's access token may do, on its
// own registration only: read the feed (a claim too), acknowledge it,
// report a refused batch for quarantine, download the snapshot and the
// checksum.
var FeedActions = []Action{ActReadChanges, ActClaimChanges, ActAckChanges, ActReportQuarantine,
	ActReadSnapshot, ActReadChecksum, ActReadFeedSummary}

func feedAction(a Action) bool {
	for _, f := range FeedActions {
		if f == a {
			return true
		}
	}
	return false
}

// AuthorizeDatabase is Authorize for an action on registration databaseID
// of the principal's organization (the store scopes the read to it). A
// database credential's token passes only for its own registration and
// the feed actions; every other principal as Authorize says.
func AuthorizeDatabase(p *Principal, a Action, databaseID string) error {
	if p != nil && p.DatabaseID != "" && p.DatabaseID != databaseID {
		return fmt.Errorf("%w: this credential reads another database's feed", ErrForbidden)
	}
	return Authorize(p, a)
}

// Actions lists every action, sorted.
func Actions() []Action {
	out := make([]Action, 0, len(rules))
	for a := range rules {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Valid reports whether a is a known action.
func (a Action) Valid() bool {
	_, ok := rules[a]
	return ok
}

// Category returns the action's category of the minimum-role table; an
// unknown action is sysadmin-only.
func (a Action) Category() Category {
	if r, ok := rules[a]; ok {
		return r.cat
	}
	return CatSysAdmin
}

// Scope returns the scope the action needs; an unknown action needs write.
func (a Action) Scope() Scope {
	if r, ok := rules[a]; ok {
		return r.scope
	}
	return ScopeWrite
}

// Authorize decides whether p may perform a. It returns nil,
// ErrUnauthenticated (no principal) or ErrForbidden wrapped with the reason.
// An unknown action is refused to everyone, so that a new use case cannot be
// reachable before someone decides who may call it.
func Authorize(p *Principal, a Action) error {
	r, ok := rules[a]
	if !ok {
		if p == nil {
			return ErrUnauthenticated
		}
		return fmt.Errorf("%w: unknown action %q", ErrForbidden, a)
	}
	if p != nil && p.DatabaseID != "" && !feedAction(a) {
		return fmt.Errorf("%w: a database credential reads its database's feed and nothing else", ErrForbidden)
	}
	return AuthorizeCategory(p, r.cat, r.scope)
}
