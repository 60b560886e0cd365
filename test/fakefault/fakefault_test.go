package fakefault

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"
)

// TestTake: injected failures are consumed one a request, a 429 carries
// Retry-After "1" unless set otherwise, and no failure writes nothing.
func TestTake(t *testing.T) {
	is := is.New(t)
	var f Faults
	f.FailNext(2, http.StatusTooManyRequests)
	var statuses []int
	var retry []string
	for range 3 {
		w := httptest.NewRecorder()
		failed := f.Take().Fail(w, func(w http.ResponseWriter, status int, msg string) { w.WriteHeader(status) })
		if failed {
			statuses = append(statuses, w.Code)
			retry = append(retry, w.Header().Get("Retry-After"))
		}
	}
	is.Equal(statuses, []int{429, 429})
	is.Equal(retry, []string{"1", "1"})
	f.SetRetryAfter("")
	f.FailNext(1, http.StatusTooManyRequests)
	w := httptest.NewRecorder()
	is.True(f.Take().Fail(w, func(w http.ResponseWriter, status int, msg string) { w.WriteHeader(status) }))
	is.Equal(w.Header().Get("Retry-After"), "")
}
