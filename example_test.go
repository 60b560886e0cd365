package enrich_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
)

// Embed the service in a Go program: no HTTP, memory storage, the sandbox
// model. Set Config.DatabaseURL to keep the data in PostgreSQL.
func ExampleNewEmbedded() {
	ctx := context.Background()
	e, err := enrich.NewEmbedded(ctx, enrich.Config{
		Sandbox:         true,
		PasswordHashing: "fast",
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	sess, err := e.Access.Register(ctx, "me@example.com", "a long password", "Acme")
	if err != nil {
		panic(err)
	}
	p := &access.Principal{OrgID: sess.Org.ID, UserID: sess.User.ID, Role: access.Owner, Scopes: access.DefaultScopes()}
	sc, err := e.Schemas.Create(ctx, p, app.NewSchemaInput{Name: "Company", Schema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"name": {"type": "string"},
			"headquarters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
		},
		"required": ["name", "headquarters"]
	}`)})
	if err != nil {
		panic(err)
	}
	res, err := e.Enrichment.Sync(ctx, p, app.EnrichRequest{
		EntityData: json.RawMessage(`{"name": "Acme"}`),
		SchemaID:   sc.ID,
		Models:     []string{"sandbox::echo"},
	})
	if err != nil {
		panic(err)
	}
	rec, err := e.Records.Get(ctx, p, res.RecordID)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Job.State, res.Result["name"], rec.Model)
	// Output: completed Acme sandbox::echo
}
