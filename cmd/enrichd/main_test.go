package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMigratePrintsWhatItApplied(t *testing.T) {
	is := is.New(t)
	t.Setenv("DATABASE_URL", pgtest.Native(t))
	t.Setenv("ENRICH_JWT_SECRET", strings.Repeat("y", 40))
	var out bytes.Buffer
	is.NoErr(run([]string{"migrate"}, &out))
	is.True(regexp.MustCompile(`(?m)^applied \d{14}_initial$`).MatchString(out.String())) // ours, by name
	is.True(regexp.MustCompile(`(?m)^applied river 001 `).MatchString(out.String()))      // then River's
	is.True(regexp.MustCompile(`(?m)^\d+ migrations applied$`).MatchString(out.String()))

	out.Reset()
	is.NoErr(run([]string{"migrate"}, &out))
	is.Equal(out.String(), "database is up to date: no migration to apply\n")

	t.Setenv("DATABASE_URL", "")
	is.True(run([]string{"migrate"}, &out) != nil)
}
