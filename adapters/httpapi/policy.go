package httpapi

import "github.com/entityenrich/enrich/domain/access"

// Route names an HTTP route by method and path template.
type Route struct {
	Method string
	Path   string
}

// routes maps every route to the action (use case) it performs, whose rule
// domain/access keeps. The use case checks that rule itself; the middleware
// applies it early, before a body is read. A route missing here is refused
// to all but system administrators (see actionOf), so that a new route
// cannot be reachable without someone deciding who may call it.
var routes = map[Route]access.Action{
	{"GET", "/healthz"}:                            access.ActCheckHealth,
	{"GET", "/readyz"}:                             access.ActCheckHealth,
	{"GET", "/metrics"}:                            access.ActCheckHealth,
	{"POST", "/api/auth/register"}:                 access.ActRegister,
	{"POST", "/api/auth/login"}:                    access.ActLogin,
	{"POST", "/api/auth/refresh"}:                  access.ActRefresh,
	{"POST", "/api/auth/logout"}:                   access.ActLogout,
	{"GET", "/api/auth/me"}:                        access.ActMe,
	{"GET", "/api/openapi.json"}:                   access.ActReadAPIDocs,
	{"GET", "/api/docs"}:                           access.ActReadAPIDocs,
	{"GET", "/api/docs/{asset}"}:                   access.ActReadAPIDocs,
	{"GET", "/api/users"}:                          access.ActListMembers,
	{"POST", "/api/users"}:                         access.ActAddMember,
	{"PATCH", "/api/users/{id}"}:                   access.ActUpdateMember,
	{"POST", "/api/invitations"}:                   access.ActCreateInvitation,
	{"GET", "/api/invitations"}:                    access.ActListInvitations,
	{"DELETE", "/api/invitations/{id}"}:            access.ActRevokeInvitation,
	{"POST", "/api/auth/api-keys"}:                 access.ActCreateKey,
	{"GET", "/api/auth/api-keys"}:                  access.ActListKeys,
	{"PATCH", "/api/auth/api-keys/{id}"}:           access.ActSetKeyRole,
	{"DELETE", "/api/auth/api-keys/{id}"}:          access.ActRevokeKey,
	{"GET", "/api/schema/saved"}:                   access.ActListSchemas,
	{"GET", "/api/schema/saved/{id}"}:              access.ActGetSchema,
	{"POST", "/api/schema/saved"}:                  access.ActCreateSchema,
	{"POST", "/api/schema/sample/generate/stream"}: access.ActGenerateSamples,
	{"POST", "/api/schema/sample/generate/sync"}:   access.ActGenerateSamples,
	{"GET", "/api/records"}:                        access.ActListRecords,
	{"GET", "/api/records/{id}"}:                   access.ActGetRecord,
	{"GET", "/api/enrichment/options"}:             access.ActEnrichmentOptions,
	{"POST", "/api/single/enrich/stream"}:          access.ActEnrich,
	{"POST", "/api/single/enrich/sync"}:            access.ActEnrich,
	{"GET", "/api/llm/stream/{job_id}"}:            access.ActFollowJob,
	{"POST", "/api/llm/cancel/{job_id}"}:           access.ActCancelJob,
	{"POST", "/api/llm/continue/{job_id}"}:         access.ActContinueJob,

	{"GET", "/api/org-keys"}:                           access.ActListProviderKeys,
	{"POST", "/api/org-keys"}:                          access.ActCreateProviderKey,
	{"PATCH", "/api/org-keys/{key_id}"}:                access.ActUpdateProviderKey,
	{"DELETE", "/api/org-keys/{key_id}"}:               access.ActDeleteProviderKey,
	{"POST", "/api/org-keys/{key_id}/enable"}:          access.ActEnableProviderKey,
	{"POST", "/api/org-keys/{key_id}/health-check"}:    access.ActTestProviderKey,
	{"GET", "/api/global-keys"}:                        access.ActListGlobalKeys,
	{"POST", "/api/global-keys"}:                       access.ActCreateGlobalKey,
	{"PATCH", "/api/global-keys/{key_id}"}:             access.ActUpdateGlobalKey,
	{"DELETE", "/api/global-keys/{key_id}"}:            access.ActDeleteGlobalKey,
	{"POST", "/api/global-keys/{key_id}/enable"}:       access.ActEnableGlobalKey,
	{"POST", "/api/global-keys/{key_id}/health-check"}: access.ActTestGlobalKey,
	{"POST", "/api/global-keys/test-all"}:              access.ActTestAllGlobalKeys,

	{"GET", "/api/organization/model-defaults"}:   access.ActGetModelDefaults,
	{"PUT", "/api/organization/model-defaults"}:   access.ActSetModelDefaults,
	{"PATCH", "/api/organization/model-defaults"}: access.ActSetModelDefaults,

	{"GET", "/api/costs/summary"}:                      access.ActViewCosts,
	{"GET", "/api/costs/stats"}:                        access.ActViewCosts,
	{"GET", "/api/costs/by-model"}:                     access.ActViewCosts,
	{"GET", "/api/costs/presets/{preset}"}:             access.ActViewCosts,
	{"GET", "/api/costs/performance"}:                  access.ActViewCosts,
	{"GET", "/api/costs/performance/presets/{preset}"}: access.ActViewCosts,
	// Schema analysis (ambiguity, identity scoping).
	{"POST", "/api/schema/analyze-sample"}:     access.ActAnalyzeSample,
	{"POST", "/api/schema/saved/{id}/analyze"}: access.ActAnalyzeSchema,
	{"POST", "/api/schema/scoping-split"}:      access.ActScopingSplit,
	// The saved-schema lifecycle.
	{"GET", "/api/schema/saved/deleted"}:                 access.ActListDeletedSchemas,
	{"PATCH", "/api/schema/saved/{id}"}:                  access.ActUpdateSchema,
	{"DELETE", "/api/schema/saved/{id}"}:                 access.ActDeleteSchema,
	{"DELETE", "/api/schema/saved/{id}/permanent"}:       access.ActDeleteSchema,
	{"POST", "/api/schema/saved/{id}/restore"}:           access.ActRestoreSchema,
	{"POST", "/api/schema/saved/{id}/duplicate"}:         access.ActDuplicateSchema,
	{"POST", "/api/schema/saved/{id}/publish"}:           access.ActPublishSchema,
	{"POST", "/api/schema/saved/{id}/publish/validate"}:  access.ActValidatePublish,
	{"DELETE", "/api/schema/saved/{id}/enrichment-data"}: access.ActPurgeSchemaData,

	{"GET", "/api/databases"}:                                             access.ActListDatabases,
	{"POST", "/api/databases"}:                                            access.ActCreateDatabase,
	{"GET", "/api/schemas/{schema_id}/databases"}:                         access.ActListDatabases,
	{"POST", "/api/schemas/{schema_id}/databases"}:                        access.ActCreateDatabase,
	{"POST", "/api/schemas/{schema_id}/databases/validate"}:               access.ActValidateDatabase,
	{"GET", "/api/schemas/{schema_id}/relational-map"}:                    access.ActGetRelationalMap,
	{"GET", "/api/databases/{database_id}"}:                               access.ActGetDatabase,
	{"PATCH", "/api/databases/{database_id}"}:                             access.ActUpdateDatabase,
	{"DELETE", "/api/databases/{database_id}"}:                            access.ActDeleteDatabase,
	{"GET", "/api/databases/{database_id}/relational-map"}:                access.ActGetRelationalMap,
	{"POST", "/api/databases/{database_id}/schemas/{schema_id}"}:          access.ActLinkDatabase,
	{"DELETE", "/api/databases/{database_id}/schemas/{schema_id}"}:        access.ActDeleteDatabase,
	{"PATCH", "/api/databases/{database_id}/schemas/{schema_id}"}:         access.ActLinkDatabase,
	{"POST", "/api/databases/{database_id}/schemas/{schema_id}/validate"}: access.ActValidateDatabase,
	{"GET", "/api/schemas/{schema_id}/entities"}:                          access.ActListEntities,
	{"POST", "/api/databases/{database_id}/quarantine/reinject"}:          access.ActActOnQuarantine,
	{"POST", "/api/records/sync-to-database"}:                             access.ActSyncRecordsToDB,
	// Schema generation and AI edit (issue 10, part C1).
	{"POST", "/api/schema/generate/stream"}:          access.ActGenerateSchema,
	{"POST", "/api/schema/generate/sync"}:            access.ActGenerateSchema,
	{"POST", "/api/schema/samples/conformance"}:      access.ActCheckSamples,
	{"POST", "/api/schema/saved/{id}/prompt/stream"}: access.ActEditSchemaAI,
	{"POST", "/api/schema/saved/{id}/prompt"}:        access.ActEditSchemaAI,
	// Records deletion and fetching a batch from a URL (issue 11, part R).
	{"POST", "/api/records/batch-delete"}: access.ActDeleteRecords,
	{"POST", "/api/batch/fetch"}:          access.ActFetchEntities,
	// Fusion of stored records (issue 11, part F).
	{"POST", "/api/fusion/merge"}:        access.ActFusionMerge,
	{"POST", "/api/fusion/merge/stream"}: access.ActFusionMerge,
	// Batch enrichment (issue 11, part BC).
	{"POST", "/api/batch/start"}: access.ActStartBatch,
	// An organization's own providers (issue 8): reads are provider info
	// (operators, issue 27), changes are owners', like provider keys.
	{"GET", "/api/providers"}:                                access.ActListOrgProviders,
	{"POST", "/api/providers"}:                               access.ActCreateOrgProvider,
	{"GET", "/api/providers/{provider_id}"}:                  access.ActGetOrgProvider,
	{"PATCH", "/api/providers/{provider_id}"}:                access.ActUpdateOrgProvider,
	{"DELETE", "/api/providers/{provider_id}"}:               access.ActDeleteOrgProvider,
	{"POST", "/api/providers/{provider_id}/models"}:          access.ActAddOrgProviderModel,
	{"POST", "/api/providers/{provider_id}/test-connection"}: access.ActTestOrgProvider,
	{"POST", "/api/providers/{provider_id}/discover-models"}: access.ActDiscoverOrgProviderModels,
	{"GET", "/api/providers/models/{model_id}"}:              access.ActGetOrgProvider,
	{"PATCH", "/api/providers/models/{model_id}"}:            access.ActUpdateOrgProvider,
	{"DELETE", "/api/providers/models/{model_id}"}:           access.ActUpdateOrgProvider,
	// A registration's delta feed (issue 28). GET /changes is a read; the
	// use case asks for feed.claim (write scope) when claim=true.
	{"GET", "/api/databases/{database_id}/changes"}:             access.ActReadChanges,
	{"POST", "/api/databases/{database_id}/ack"}:                access.ActAckChanges,
	{"POST", "/api/databases/{database_id}/clear-acked"}:        access.ActClearAcked,
	{"GET", "/api/databases/{database_id}/deltas/summary"}:      access.ActReadFeedSummary,
	{"GET", "/api/databases/{database_id}/quarantine"}:          access.ActListQuarantine,
	{"POST", "/api/databases/{database_id}/quarantine/report"}:  access.ActReportQuarantine,
	{"POST", "/api/databases/{database_id}/quarantine/delete"}:  access.ActActOnQuarantine,
	{"POST", "/api/databases/{database_id}/quarantine/redrive"}: access.ActActOnQuarantine,
	// Database sync: the credential, its exchange, the snapshot and the
	// checksum (issue 28).
	{"GET", "/api/databases/{database_id}/credential"}:    access.ActGetCredential,
	{"POST", "/api/databases/{database_id}/credential"}:   access.ActCreateCredential,
	{"DELETE", "/api/databases/{database_id}/credential"}: access.ActDeleteCredential,
	{"POST", "/api/database-sync/exchange"}:               access.ActExchangeCredential,
	{"GET", "/api/databases/{database_id}/snapshot"}:      access.ActReadSnapshot,
	{"GET", "/api/databases/{database_id}/checksum"}:      access.ActReadChecksum,

	// Notifications (issue 28): subscriptions and links' webhooks are
	// editors', the webhook secret the registration owner's.
	{"GET", "/api/schemas/{schema_id}/subscriptions"}:                         access.ActListSubscriptions,
	{"POST", "/api/schemas/{schema_id}/subscriptions"}:                        access.ActCreateSubscription,
	{"DELETE", "/api/schemas/{schema_id}/subscriptions"}:                      access.ActDeleteSubscription,
	{"PUT", "/api/databases/{database_id}/schemas/{saved_schema_id}/webhook"}: access.ActSetDatabaseWebhook,
	{"GET", "/api/databases/{database_id}/webhook-secret"}:                    access.ActGetWebhookSecret,

	// Attachments (issue 29): uploads and deletes are editors', reads
	// operators'; the policies per media type system administrators'.
	{"GET", "/api/attachments"}:                             access.ActListAttachments,
	{"POST", "/api/attachments"}:                            access.ActUploadAttachment,
	{"POST", "/api/attachments/base64"}:                     access.ActUploadAttachment,
	{"POST", "/api/attachments/metadata"}:                   access.ActDescribeAttachments,
	{"POST", "/api/semantic-concepts/merge-impact"}:         access.ActConceptMergeImpact,
	{"POST", "/api/semantic-concepts/merge"}:                access.ActConceptMerge,
	{"POST", "/api/attachments/verify"}:                     access.ActDescribeAttachments,
	{"DELETE", "/api/attachments/{attachment_id}"}:          access.ActDeleteAttachment,
	{"GET", "/api/attachments/{attachment_id}/download"}:    access.ActReadAttachment,
	{"GET", "/api/admin/attachment-policies"}:               access.ActListAttachmentPolicies,
	{"PATCH", "/api/admin/attachment-policies/{mime_type}"}: access.ActUpdateAttachmentPolicies,

	// Semantic concepts' import (editor; minting also owner, which the use
	// case checks by the body) and export (operator).
	{"POST", "/api/semantic-concepts/import"}: access.ActImportConcepts,
	{"GET", "/api/semantic-concepts/export"}:  access.ActExportConcepts,
	// The embedding-model migration (issue 30): status and preview are
	// operators', start and cancel owners'.
	{"GET", "/api/semantic-concepts/migration/status"}:   access.ActConceptMigrationStatus,
	{"POST", "/api/semantic-concepts/migration/preview"}: access.ActConceptMigrationPreview,
	{"POST", "/api/semantic-concepts/migration/start"}:   access.ActConceptMigrationStart,
	{"POST", "/api/semantic-concepts/migration/cancel"}:  access.ActConceptMigrationCancel,
	// The organization's embedding-model setting: read by operators, set
	// by owners.
	{"GET", "/api/org-keys/embedding-model"}: access.ActGetEmbeddingModel,
	{"PUT", "/api/org-keys/embedding-model"}: access.ActSetEmbeddingModel,
}

// actionOf returns a route's action, and false for a route missing from the
// table.
func actionOf(method, path string) (access.Action, bool) {
	if a, ok := routes[Route{method, path}]; ok {
		return a, true
	}
	a, ok := conceptRoutes[Route{method, path}]
	return a, ok
}

// public reports whether a route needs no credential.
func public(method, path string) bool {
	a, ok := actionOf(method, path)
	return ok && a.Category() == access.CatPublic
}

// authorizeRoute applies the route's action rule to p. A route missing from
// the table is for system administrators only, with the scope of its method.
func authorizeRoute(p *access.Principal, method, path string) error {
	if a, ok := actionOf(method, path); ok {
		return access.Authorize(p, a)
	}
	return access.AuthorizeCategory(p, access.CatSysAdmin, scopeOf(method))
}

// scopeOf is the scope an HTTP method needs: GET and HEAD read, others write.
// Every route's action needs the scope of its method (a test checks it).
func scopeOf(method string) access.Scope {
	if method == "GET" || method == "HEAD" {
		return access.ScopeRead
	}
	return access.ScopeWrite
}

// PolicyRoutes lists every route the policy knows.
func PolicyRoutes() []Route {
	out := make([]Route, 0, len(routes)+len(conceptRoutes))
	for r := range routes {
		out = append(out, r)
	}
	for r := range conceptRoutes {
		out = append(out, r)
	}
	return out
}
