package httpapi

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
)

// TestLastEventID: the header, else the query parameter; garbage, negative
// and out-of-range values are refused naming the one read; the header wins.
func TestLastEventID(t *testing.T) {
	tests := []struct {
		name, header, query string
		want                int64
		field               string
	}{
		{"none", "", "", 0, ""},
		{"header", "7", "", 7, ""},
		{"header with spaces", " 7 ", "", 7, ""},
		{"query", "", "12", 12, ""},
		{"header wins", "3", "12", 3, ""},
		{"zero", "0", "", 0, ""},
		{"max int64", "9223372036854775807", "", 9223372036854775807, ""},
		{"past int64", "9223372036854775808", "", 0, "Last-Event-ID"},
		{"huge", strings.Repeat("9", 400), "", 0, "Last-Event-ID"},
		{"negative", "-1", "", 0, "Last-Event-ID"},
		{"plus sign", "+1", "", 0, "Last-Event-ID"},
		{"garbage", "abc", "", 0, "Last-Event-ID"},
		{"float", "1.5", "", 0, "Last-Event-ID"},
		{"hex", "0x10", "", 0, "Last-Event-ID"},
		{"NUL", "1\x002", "", 0, "Last-Event-ID"},
		{"garbage query", "", "x", 0, "last_event_id"},
		{"negative query", "", "-5", 0, "last_event_id"},
		{"invalid UTF-8 query", "", "\xff", 0, "last_event_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			target := "/api/llm/stream/j"
			if tt.query != "" {
				target += "?last_event_id=" + url.QueryEscape(tt.query)
			}
			r := httptest.NewRequest("GET", target, nil)
			if tt.header != "" {
				r.Header["Last-Event-Id"] = []string{tt.header}
			}
			got, err := lastEventID(r)
			if tt.field == "" {
				is.NoErr(err)
				is.Equal(got, tt.want)
				return
			}
			e, ok := app.AsError(err)
			is.True(ok)
			is.Equal(e.Field, tt.field)
			is.True(len(e.Detail) < 200)
			is.True(!strings.ContainsRune(e.Detail, 0))
		})
	}
}
