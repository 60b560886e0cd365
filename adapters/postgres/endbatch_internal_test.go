package postgres

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// TestEndColumns checks that the column lists of a job's end are the row
// models' columns, in order, so that a column added to a model is not left
// out of the end's INSERTs.
func TestEndColumns(t *testing.T) {
	db := bun.NewDB(nil, pgdialect.New())
	for _, c := range []struct {
		model   any
		columns string
	}{
		{jobRow{}, jobColumns},
		{recordRow{}, recordColumns},
		{usageRow{}, usageColumns},
		{eventRow{}, eventColumns},
		{keyRow{}, keyColumns},
	} {
		t.Run(reflect.TypeOf(c.model).Name(), func(t *testing.T) {
			is := is.New(t)
			var names []string
			for _, f := range db.Table(reflect.TypeOf(c.model)).Fields {
				names = append(names, f.Name)
			}
			is.Equal(strings.Join(names, ", "), c.columns)
		})
	}
}

// TestEndStmts checks the statements of an end: one per record and usage
// entry, one for the events of each job, each statement with as many
// arguments as its text has parameters; and text that no store takes (NUL,
// bytes that are not UTF-8) is found.
func TestEndStmts(t *testing.T) {
	is := is.New(t)
	j := &job.Job{ID: "j1", OrgID: "o", State: job.Paused, Attempt: 2}
	end := ports.JobEnd{Job: j, From: job.Running, Events: []job.Event{
		{JobID: "j1", Seq: 1, Type: job.EventClassificationStarted, Payload: job.ClassificationStarted{Model: "x"}},
		{JobID: "j1", Seq: 2, Type: "b", Payload: job.Raw{Type: "b"}},
		{JobID: "j2", Seq: 7, Type: "c", Payload: job.Raw{Type: "c", Data: []byte(`{}`)}},
	}}
	codec := jobcodec.Events{}
	stmts, err := endStmts(end, codec)
	is.NoErr(err)
	is.Equal(len(stmts), 3) // the job and two event statements
	is.Equal(stmts[0].sql, pauseJobSQL)
	for _, st := range stmts {
		is.Equal(len(st.args), params(st.sql)) // one argument per parameter
	}
	is.Equal(stmts[1].args[0], "j1")
	is.Equal(stmts[1].args[1], []int64{1, 2})
	is.Equal(*stmts[1].args[3].([]*string)[0], `{"status":"running","model":"x"}`)
	is.True(stmts[1].args[3].([]*string)[1] == nil) // an event without data stores NULL
	is.Equal(stmts[2].args[0], "j2")
	_, ok := refusedText(stmts)
	is.True(ok)

	end.Events[1].Payload = job.ClassificationStarted{Model: "a\x00b"}
	stmts, err = endStmts(end, codec)
	is.NoErr(err)
	_, ok = refusedText(stmts)
	is.True(ok) // JSON writes NUL as \u0000, which the json column keeps
	for _, bad := range []string{"bad\x00", "bad \xff"} {
		j.Error = bad // as no domain rule would leave it
		stmts, err = endStmts(end, codec)
		is.NoErr(err)
		_, ok = refusedText(stmts)
		is.True(!ok)
	}
}

// params is the highest $n of a statement's text.
func params(sql string) int {
	n := 0
	for _, m := range regexp.MustCompile(`\$([0-9]+)`).FindAllStringSubmatch(sql, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	return n
}

// TestEndParams checks every statement text of an end against its
// arguments' builders.
func TestEndParams(t *testing.T) {
	is := is.New(t)
	is.Equal(params(insertJobSQL), 16)
	is.Equal(params(endJobSQL), 8)
	is.Equal(params(pauseJobSQL), 11)
	is.Equal(params(insertRecordSQL), len(recordArgs(&enrichment.Record{})))
	is.Equal(params(insertUsageSQL), len(usageArgs(usage.Entry{})))
	stmts, err := endStmts(ports.JobEnd{Job: &job.Job{}, Create: true}, jobcodec.Events{})
	is.NoErr(err)
	is.Equal(len(stmts[0].args), params(insertJobSQL))
}
