package httpapi

import (
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
)

func (s *Server) registerAuthRoutes(r *mux.Router) {
	r.HandleFunc("/api/auth/register", s.register).Methods(http.MethodPost)
	r.HandleFunc("/api/auth/login", s.login).Methods(http.MethodPost)
	r.HandleFunc("/api/auth/refresh", s.refresh).Methods(http.MethodPost)
	r.HandleFunc("/api/auth/logout", s.logout).Methods(http.MethodPost)
	r.HandleFunc("/api/auth/me", s.me).Methods(http.MethodGet)
	r.HandleFunc("/api/users", s.listMembers).Methods(http.MethodGet)
	r.HandleFunc("/api/users", s.addMember).Methods(http.MethodPost)
	r.HandleFunc("/api/users/{id}", s.updateMember).Methods(http.MethodPatch)
	r.HandleFunc("/api/auth/api-keys", s.createKey).Methods(http.MethodPost)
	r.HandleFunc("/api/auth/api-keys", s.listKeys).Methods(http.MethodGet)
	r.HandleFunc("/api/auth/api-keys/{id}", s.updateKey).Methods(http.MethodPatch)
	r.HandleFunc("/api/auth/api-keys/{id}", s.revokeKey).Methods(http.MethodDelete)
}

type userJSON struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	OrgID     string    `json:"organization_id"`
	Status    string    `json:"status"`
	SysAdmin  bool      `json:"is_sysadmin"`
	CreatedAt time.Time `json:"created_at"`
}

type orgJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func toUser(u *access.User) *userJSON {
	if u == nil {
		return nil
	}
	return &userJSON{ID: u.ID, Email: u.Email, Role: string(u.Role), OrgID: u.OrgID, Status: string(u.Status), SysAdmin: u.SysAdmin, CreatedAt: u.CreatedAt}
}

type sessionJSON struct {
	User         *userJSON `json:"user"`
	Organization orgJSON   `json:"organization"`
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type"`
	ExpiresIn    int64     `json:"expires_in"`
	RefreshToken string    `json:"refresh_token"`
}

func toSession(ss *app.Session) sessionJSON {
	return sessionJSON{User: toUser(ss.User), Organization: orgJSON{ss.Org.ID, ss.Org.Name}, AccessToken: ss.AccessToken,
		TokenType: "bearer", ExpiresIn: int64(ss.ExpiresIn / time.Second), RefreshToken: ss.RefreshToken}
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email        string `json:"email"`
		Password     string `json:"password"`
		Organization string `json:"organization"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	ss, err := s.access.Register(r.Context(), in.Email, in.Password, in.Organization)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toSession(ss))
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	ss, err := s.access.Login(r.Context(), in.Email, in.Password, clientIP(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSession(ss))
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request) {
	var in struct {
		RefreshToken string `json:"refresh_token"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	ss, err := s.access.RefreshSession(r.Context(), in.RefreshToken)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSession(ss))
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	var in struct {
		RefreshToken string `json:"refresh_token"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	if err := s.access.Logout(r.Context(), in.RefreshToken); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// clientIP is the peer address; proxies' forwarding headers are not trusted.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	us, err := s.access.ListMembers(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]*userJSON, 0, len(us))
	for _, u := range us {
		out = append(out, toUser(u))
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": out})
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
		Role     string `json:"role"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	u, err := s.access.AddMember(r.Context(), principal(r), app.NewMemberInput{Email: in.Email, Password: in.Password, Role: access.Role(in.Role)})
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toUser(u))
}

func (s *Server) updateMember(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Role   *string `json:"role"`
		Status *string `json:"status"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	var c access.MemberChange
	if in.Role != nil {
		role := access.Role(*in.Role)
		c.Role = &role
	}
	if in.Status != nil {
		st := access.UserStatus(*in.Status)
		c.Status = &st
	}
	u, err := s.access.UpdateMember(r.Context(), principal(r), mux.Vars(r)["id"], c)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toUser(u))
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	u, org, err := s.access.Me(r.Context(), p)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	kind := "user"
	var keyID *string
	if p.KeyID != "" {
		kind, keyID = "api_key", &p.KeyID
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": kind, "user": toUser(u), "organization": orgJSON{org.ID, org.Name},
		"role": p.Role, "scopes": p.Scopes, "is_sysadmin": p.SysAdmin, "key_id": keyID, "key_expires_at": p.ExpiresAt})
}

type keyJSON struct {
	ID         string     `json:"id"`
	Key        string     `json:"key,omitempty"`
	Prefix     string     `json:"prefix"`
	KeyPrefix  string     `json:"key_prefix"`
	Name       string     `json:"name"`
	Role       *string    `json:"role"`
	Scopes     []string   `json:"scopes"`
	Legacy     bool       `json:"legacy"`
	ExpiresAt  *time.Time `json:"expires_at"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// keyStateJSON is a key as listed or changed: with its use and state, every
// nullable field present.
type keyStateJSON struct {
	keyJSON
	UseCount     int64      `json:"use_count"`
	ExpiringSoon bool       `json:"expiring_soon"`
	IsActive     bool       `json:"is_active"`
	RevokedAt    *time.Time `json:"revoked_at"`
}

func toKeyState(k *access.APIKey, now time.Time) keyStateJSON {
	return keyStateJSON{keyJSON: toKey(k), UseCount: k.UseCount, ExpiringSoon: k.ExpiringSoon(now),
		IsActive: k.Usable(now) == nil, RevokedAt: k.RevokedAt}
}

func toKey(k *access.APIKey) keyJSON {
	out := keyJSON{ID: k.ID, Prefix: k.Prefix, KeyPrefix: k.Prefix, Name: k.Name, Legacy: k.Legacy, ExpiresAt: k.ExpiresAt,
		CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt}
	if !k.Legacy {
		role := string(k.Role)
		out.Role = &role
	}
	for _, sc := range k.Scopes {
		out.Scopes = append(out.Scopes, string(sc))
	}
	return out
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name          string          `json:"name"`
		Role          json.RawMessage `json:"role"`
		Scopes        []string        `json:"scopes"`
		ExpiresAt     *time.Time      `json:"expires_at"`
		ExpiresInDays *int            `json:"expires_in_days"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	ni := app.NewKeyInput{Name: in.Name, Scopes: in.Scopes, ExpiresAt: in.ExpiresAt, ExpiresInDays: in.ExpiresInDays}
	if len(in.Role) > 0 && string(in.Role) != "null" {
		var role string
		if err := json.Unmarshal(in.Role, &role); err != nil {
			s.Error(w, r, app.Invalid("role", "role must be owner, editor, operator or null"))
			return
		}
		rr := access.Role(role)
		ni.Role = &rr
	}
	k, clear, err := s.access.CreateKey(r.Context(), principal(r), ni)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := toKey(k)
	out.Key = clear
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	ks, err := s.access.ListKeys(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	now := time.Now()
	out := make([]keyStateJSON, 0, len(ks))
	for _, k := range ks {
		out = append(out, toKeyState(k, now))
	}
	writeJSON(w, http.StatusOK, map[string]any{"api_keys": out})
}

func (s *Server) updateKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Role string `json:"role"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	k, err := s.access.SetKeyRole(r.Context(), principal(r), mux.Vars(r)["id"], access.Role(in.Role))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toKeyState(k, time.Now()))
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	if err := s.access.RevokeKey(r.Context(), principal(r), mux.Vars(r)["id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decode parses the body into v or writes the error; it reports success.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	err := decode(r, v)
	if err == nil {
		return true
	}
	if err == errTooLarge {
		s.fail(w, r, http.StatusRequestEntityTooLarge, "body_too_large", "", "request body too large")
		return false
	}
	s.Error(w, r, err)
	return false
}
