package httpapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
)

// toInvitation maps an invitation, never its token or hash.
func toInvitation(i *access.Invitation, now time.Time) api.Invitation {
	out := api.Invitation{Id: i.ID, Email: nilIfEmpty(i.Email), Role: api.Role(i.Role), OrganizationId: nilIfEmpty(i.OrgID),
		CreatedAt: i.CreatedAt, ExpiresAt: i.ExpiresAt, UsedAt: i.UsedAt, RevokedAt: i.RevokedAt, Status: api.InvitationStatusPending}
	switch {
	case i.UsedAt != nil:
		out.Status = api.InvitationStatusUsed
	case i.RevokedAt != nil:
		out.Status = api.InvitationStatusRevoked
	case !now.Before(i.ExpiresAt):
		out.Status = api.InvitationStatusExpired
	}
	return out
}

func (s *Server) createInvitation(w http.ResponseWriter, r *http.Request) {
	var in api.CreateInvitationRequest
	if !s.decode(w, r, &in) {
		return
	}
	ni := app.NewInvitationInput{}
	if in.Email != nil {
		ni.Email = *in.Email
	}
	if in.Role != nil {
		role := access.Role(*in.Role)
		ni.Role = &role
	}
	if in.ExpiresInS != nil {
		ni.ExpiresIn = time.Duration(*in.ExpiresInS) * time.Second
	}
	if in.NewOrganization != nil {
		ni.NewOrganization = *in.NewOrganization
	}
	inv, token, err := s.access.CreateInvitation(r.Context(), principal(r), ni)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, api.CreatedInvitation{Invitation: toInvitation(inv, time.Now()), Token: token})
}

func (s *Server) listInvitations(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	newOrgs := r.URL.Query().Get("new_organization") == "true"
	res, err := s.access.ListInvitations(r.Context(), principal(r), newOrgs, pr)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	now := time.Now()
	out := api.InvitationList{Invitations: make([]api.Invitation, 0, len(res.Items)), NextCursor: nextCursor(res.Next),
		Page: pageNumber(pr), PageSize: pr.Size, Total: res.Total, TotalPages: page.Pages(res.Total, pr.Size)}
	for _, i := range res.Items {
		out.Invitations = append(out.Invitations, toInvitation(i, now))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) revokeInvitation(w http.ResponseWriter, r *http.Request) {
	if err := s.access.RevokeInvitation(r.Context(), principal(r), mux.Vars(r)["id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
