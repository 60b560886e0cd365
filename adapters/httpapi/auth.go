package httpapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
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
	r.HandleFunc("/api/invitations", s.createInvitation).Methods(http.MethodPost)
	r.HandleFunc("/api/invitations", s.listInvitations).Methods(http.MethodGet)
	r.HandleFunc("/api/invitations/{id}", s.revokeInvitation).Methods(http.MethodDelete)
	r.HandleFunc("/api/auth/api-keys", s.createKey).Methods(http.MethodPost)
	r.HandleFunc("/api/auth/api-keys", s.listKeys).Methods(http.MethodGet)
	r.HandleFunc("/api/auth/api-keys/{id}", s.updateKey).Methods(http.MethodPatch)
	r.HandleFunc("/api/auth/api-keys/{id}", s.revokeKey).Methods(http.MethodDelete)
}

func toUser(u *access.User) *api.User {
	if u == nil {
		return nil
	}
	return &api.User{Id: u.ID, Email: u.Email, Role: api.Role(u.Role), OrganizationId: u.OrgID,
		Status: api.UserStatus(u.Status), IsSysadmin: u.SysAdmin, CreatedAt: u.CreatedAt}
}

func toOrg(o *access.Organization) api.Organization { return api.Organization{Id: o.ID, Name: o.Name} }

// toSession maps a session; a session always has its user.
func toSession(ss *app.Session) api.Session {
	return api.Session{User: *toUser(ss.User), Organization: toOrg(ss.Org), AccessToken: ss.AccessToken,
		TokenType: api.SessionTokenTypeBearer, ExpiresIn: int(ss.ExpiresIn / time.Second), RefreshToken: ss.RefreshToken}
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var in api.RegisterRequest
	if !s.decode(w, r, &in) {
		return
	}
	ri := app.RegisterInput{Email: in.Email, Password: in.Password}
	if in.Organization != nil {
		ri.Organization = *in.Organization
	}
	if in.InvitationToken != nil {
		ri.Invitation = *in.InvitationToken
	}
	ss, err := s.access.RegisterWith(r.Context(), ri)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toSession(ss))
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var in api.LoginRequest
	if !s.decode(w, r, &in) {
		return
	}
	ss, err := s.access.Login(r.Context(), in.Email, in.Password, s.clients.of(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSession(ss))
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request) {
	var in api.RefreshRequest
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
	var in api.RefreshRequest
	if !s.decode(w, r, &in) {
		return
	}
	if err := s.access.Logout(r.Context(), in.RefreshToken); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	us, err := s.access.ListMembers(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.UserList{Users: make([]api.User, 0, len(us))}
	for _, u := range us {
		out.Users = append(out.Users, *toUser(u))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request) {
	var in api.NewUserRequest
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
	var in api.UpdateUserRequest
	if !s.decode(w, r, &in) {
		return
	}
	u, err := s.access.UpdateMember(r.Context(), principal(r), mux.Vars(r)["id"], toMemberChange(in))
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
	out := api.Me{Kind: api.MeKindUser, User: toUser(u), Organization: toOrg(org), Role: api.Role(p.Role),
		Scopes: toScopes(p.Scopes), IsSysadmin: p.SysAdmin, KeyId: nilIfEmpty(p.KeyID), KeyExpiresAt: p.ExpiresAt}
	if p.KeyID != "" {
		out.Kind = api.MeKindApiKey
	}
	writeJSON(w, http.StatusOK, out)
}

func toMemberChange(in api.UpdateUserRequest) access.MemberChange {
	var c access.MemberChange
	if in.Role != nil {
		role := access.Role(*in.Role)
		c.Role = &role
	}
	if in.Status != nil {
		st := access.UserStatus(*in.Status)
		c.Status = &st
	}
	return c
}

// toScopes keeps nil nil (written as null).
func toScopes(scs []access.Scope) []api.Scope {
	var out []api.Scope
	for _, sc := range scs {
		out = append(out, api.Scope(sc))
	}
	return out
}

// toKeyState maps a key as listed or changed: with its use and state, every
// nullable field present.
func toKeyState(k *access.APIKey, now time.Time) api.APIKey {
	out := api.APIKey{Id: k.ID, Prefix: k.Prefix, KeyPrefix: k.Prefix, Name: k.Name, Legacy: k.Legacy,
		Scopes: toScopes(k.Scopes), ExpiresAt: k.ExpiresAt, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt,
		UseCount: int(k.UseCount), ExpiringSoon: k.ExpiringSoon(now), IsActive: k.Usable(now) == nil, RevokedAt: k.RevokedAt}
	if !k.Legacy {
		role := api.APIKeyRole(k.Role)
		out.Role = &role
	}
	return out
}

// toCreatedKey maps a new key with its only clear copy.
func toCreatedKey(k *access.APIKey, clear string) api.CreatedAPIKey {
	out := api.CreatedAPIKey{Id: k.ID, Key: clear, Prefix: k.Prefix, KeyPrefix: k.Prefix, Name: k.Name, Legacy: k.Legacy,
		Scopes: toScopes(k.Scopes), ExpiresAt: k.ExpiresAt, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt}
	if !k.Legacy {
		role := api.CreatedAPIKeyRole(k.Role)
		out.Role = &role
	}
	return out
}

func toNewKeyInput(in api.CreateAPIKeyRequest) app.NewKeyInput {
	ni := app.NewKeyInput{Name: in.Name, ExpiresAt: in.ExpiresAt, ExpiresInDays: in.ExpiresInDays}
	if in.Scopes != nil {
		ni.Scopes = []string{}
		for _, sc := range *in.Scopes {
			ni.Scopes = append(ni.Scopes, string(sc))
		}
	}
	if in.Role != nil {
		role := access.Role(*in.Role)
		ni.Role = &role
	}
	return ni
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var in api.CreateAPIKeyRequest
	if !s.decode(w, r, &in) {
		return
	}
	k, clear, err := s.access.CreateKey(r.Context(), principal(r), toNewKeyInput(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, toCreatedKey(k, clear))
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	ks, err := s.access.ListKeys(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	now := time.Now()
	out := make([]api.APIKey, 0, len(ks))
	for _, k := range ks {
		out = append(out, toKeyState(k, now))
	}
	writeJSON(w, http.StatusOK, api.APIKeyList{ApiKeys: out})
}

func (s *Server) updateKey(w http.ResponseWriter, r *http.Request) {
	var in api.UpdateAPIKeyRequest
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
