package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/dbsync"
)

// The database credential, its token exchange, the snapshot and the
// checksum: what a registration's consumer uses beside the feed.
func (s *Server) registerConsumerRoutes(r *mux.Router) {
	r.HandleFunc("/api/databases/{database_id}/credential", s.getCredential).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}/credential", s.createCredential).Methods(http.MethodPost)
	r.HandleFunc("/api/databases/{database_id}/credential", s.revokeCredential).Methods(http.MethodDelete)
	r.HandleFunc("/api/database-sync/exchange", s.exchangeCredential).Methods(http.MethodPost)
	r.HandleFunc("/api/databases/{database_id}/snapshot", s.snapshot).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}/checksum", s.checksum).Methods(http.MethodGet)
}

// connectedWithin is how recent a credential's last use must be for it to
// count as connected.
const connectedWithin = 2 * time.Minute

func toCredential(c *dbsync.Credential, now time.Time) api.DatabaseCredentialResponse {
	return api.DatabaseCredentialResponse{Id: c.ID, OrganizationId: c.OrgID, SchemaDatabaseId: c.DatabaseID,
		Status: api.DatabaseCredentialResponseStatus(c.Status()), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		IsConnected:      c.RevokedAt == nil && c.LastSeenAt != nil && now.Sub(*c.LastSeenAt) < connectedWithin,
		LastApplyDeltaId: c.LastApplyDeltaID, LastSeenAt: c.LastSeenAt, LastSeenIp: nilIfEmpty(c.LastSeenIP),
		LastSeenUserAgent: nilIfEmpty(c.LastSeenUserAgent), RevokedAt: c.RevokedAt}
}

func (s *Server) getCredential(w http.ResponseWriter, r *http.Request) {
	c, err := s.consumer.GetCredential(r.Context(), principal(r), mux.Vars(r)["database_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.DatabaseCredentialState{}
	if c != nil {
		cr := toCredential(c, time.Now())
		out.Credential = &cr
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createCredential(w http.ResponseWriter, r *http.Request) {
	c, token, err := s.consumer.CreateCredential(r.Context(), principal(r), mux.Vars(r)["database_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, api.DatabaseCredentialCreateResponse{Credential: toCredential(c, time.Now()),
		RefreshToken: token, ServerUrl: serverURL(r)})
}

// serverURL is the base URL this request reached (the scheme from TLS;
// behind a proxy that terminates TLS, the consumer passes its own URL).
func serverURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) revokeCredential(w http.ResponseWriter, r *http.Request) {
	if err := s.consumer.RevokeCredential(r.Context(), principal(r), mux.Vars(r)["database_id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// exchangeCredential takes the refresh token from the query (the
// reference's client) or a JSON body.
func (s *Server) exchangeCredential(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("refresh_token")
	if token == "" && r.ContentLength != 0 {
		var in api.DatabaseTokenExchangeRequest
		if !s.decode(w, r, &in) {
			return
		}
		if in.RefreshToken != nil {
			token = *in.RefreshToken
		}
	}
	if token == "" {
		s.Error(w, r, app.Invalid("refresh_token", "refresh_token is required (in the query or the body)"))
		return
	}
	t, err := s.consumer.Exchange(r.Context(), token, s.seen(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, api.DatabaseAccessTokenResponse{AccessToken: t.AccessToken, ExpiresIn: int(t.ExpiresIn / time.Second),
		DatabaseId: t.DatabaseID, DatabaseName: t.DatabaseName, Dialect: api.DatabaseAccessTokenResponseDialect(t.Dialect)})
}

// seen is where a credential is used from.
func (s *Server) seen(r *http.Request) dbsync.Seen {
	return dbsync.Seen{IP: s.clients.of(r), UserAgent: r.UserAgent()}
}

// NoteAck records an ack made with a database credential on it (its
// last_apply_delta_id). The feed's ack handler calls it after the ack
// succeeded.
func (s *Server) NoteAck(r *http.Request, upToID int64) {
	if s.consumer != nil {
		s.consumer.NoteAck(r.Context(), principal(r), upToID)
	}
}

// snapshot streams the snapshot. Once the first byte is out, a failure
// can no longer be an error answer: the connection is cut, so the client
// sees a truncated transfer (and a file without its end line), never a
// complete-looking one.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["database_id"]
	jsonl := r.URL.Query().Get("format") == "jsonl"
	bw := bufio.NewWriterSize(w, 64<<10)
	started := false
	emit := func(p app.SnapshotPart) error {
		if p.First {
			started = true
			h := w.Header()
			h.Set("X-EE-Snapshot-Delta-Id", strconv.FormatInt(p.Head, 10))
			h.Set("Cache-Control", "no-store")
			if jsonl {
				h.Set("Content-Type", "application/x-ndjson")
				h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="snapshot-%d.jsonl"`, p.Head))
			} else {
				h.Set("Content-Type", "application/sql")
				h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="snapshot-%d.sql"`, p.Head))
			}
			w.WriteHeader(http.StatusOK)
		}
		if p.End {
			// Sent whole before the app notes the snapshot served.
			if err := writeSnapshotEnd(bw, jsonl); err != nil {
				return err
			}
			return bw.Flush()
		}
		return writeSnapshotPart(bw, id, p, jsonl)
	}
	err := s.consumer.Snapshot(r.Context(), principal(r), id, emit)
	if err == nil {
		return
	}
	if !started {
		s.Error(w, r, err)
		return
	}
	if !errors.Is(err, r.Context().Err()) {
		s.log.ErrorContext(r.Context(), "snapshot cut short", "request_id", requestID(r), "database_id", id, "err", err)
	}
	panic(http.ErrAbortHandler)
}

func writeSnapshotPart(w io.Writer, databaseID string, p app.SnapshotPart, jsonl bool) error {
	var err error
	switch {
	case jsonl:
		var v any
		switch {
		case p.First:
			v = map[string]int64{"as_of_delta_id": p.Head}
		case p.Comment != "":
			v = map[string]string{"comment": p.Comment}
		default:
			v = map[string]string{"sql": p.SQL}
		}
		b, merr := json.Marshal(v)
		if merr != nil {
			return merr
		}
		_, err = w.Write(append(b, '\n'))
	case p.First:
		_, err = io.WriteString(w, dbsync.SnapshotHeader(databaseID, p.Head)+"BEGIN;\n")
	case p.Comment != "":
		_, err = io.WriteString(w, "-- "+dbsync.CommentSafe(p.Comment)+"\n")
	default:
		_, err = io.WriteString(w, p.SQL+";\n")
	}
	return err
}

func writeSnapshotEnd(w io.Writer, jsonl bool) error {
	if jsonl {
		_, err := io.WriteString(w, `{"end":true}`+"\n")
		return err
	}
	_, err := io.WriteString(w, "COMMIT;\n-- end of snapshot\n")
	return err
}

func (s *Server) checksum(w http.ResponseWriter, r *http.Request) {
	c, err := s.consumer.Checksum(r.Context(), principal(r), mux.Vars(r)["database_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.DatabaseSyncChecksumResponse{AsOfDeltaId: c.AsOf, RowCounts: c.RowCounts, Tables: c.Tables})
}
