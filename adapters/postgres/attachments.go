package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.AttachmentStore = (*AttachmentStore)(nil)

// AttachmentStore keeps attachments' metadata in attachments and the
// administrator's policies in attachment_policies (the bytes are in a
// BlobStore).
type AttachmentStore struct{ db bun.IDB }

// NewAttachmentStore returns the store on db.
func NewAttachmentStore(db bun.IDB) *AttachmentStore { return &AttachmentStore{db: db} }

type attachmentRow struct {
	bun.BaseModel `bun:"table:attachments"`

	ID             string    `bun:"id,pk"`
	OrgID          string    `bun:"org_id,notnull"`
	Filename       string    `bun:"filename,notnull"`
	MediaType      string    `bun:"media_type,notnull"`
	SizeBytes      int64     `bun:"size_bytes,notnull"`
	SHA256         string    `bun:"sha256,notnull"`
	Mode           string    `bun:"mode,notnull"`
	ExtractionKind string    `bun:"extraction_kind,notnull"`
	Capability     string    `bun:"requires_capability,notnull"`
	Text           string    `bun:"extracted_text,notnull"`
	BlobKey        string    `bun:"blob_key,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
}

func toAttachmentRow(a *attachment.Attachment) *attachmentRow {
	return &attachmentRow{ID: a.ID, OrgID: a.OrgID, Filename: a.Filename, MediaType: a.MediaType, SizeBytes: a.SizeBytes,
		SHA256: a.SHA256, Mode: string(a.Mode), ExtractionKind: string(a.Kind), Capability: a.Capability, Text: a.Text,
		BlobKey: a.BlobKey, CreatedAt: utc(a.CreatedAt)}
}

func (r *attachmentRow) attachment() *attachment.Attachment {
	return &attachment.Attachment{ID: r.ID, OrgID: r.OrgID, Filename: r.Filename, MediaType: r.MediaType, SizeBytes: r.SizeBytes,
		SHA256: r.SHA256, Mode: attachment.Mode(r.Mode), Kind: attachment.ExtractionKind(r.ExtractionKind), Capability: r.Capability,
		Text: r.Text, BlobKey: r.BlobKey, CreatedAt: utc(r.CreatedAt)}
}

// SaveAttachment inserts a unless the organization holds its hash (the
// unique index decides, so two replicas racing on the same bytes keep
// one), then reads the one that is there.
func (s *AttachmentStore) SaveAttachment(ctx context.Context, a *attachment.Attachment) (*attachment.Attachment, bool, error) {
	// A concurrent delete of the holder between the two statements leaves
	// neither; a second round inserts.
	for range 2 {
		row := toAttachmentRow(a)
		res, err := s.db.NewInsert().Model(row).On("CONFLICT (org_id, sha256) DO NOTHING").Exec(ctx)
		if err != nil {
			return nil, false, conflict(err, "save attachment "+a.ID)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return row.attachment(), false, nil
		}
		var held attachmentRow
		err = s.db.NewSelect().Model(&held).Where("org_id = ? AND sha256 = ?", a.OrgID, a.SHA256).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, false, fail(err, "read attachment by hash")
		}
		return held.attachment(), true, nil
	}
	return nil, false, fmt.Errorf("postgres: save attachment %s: the holder of its hash keeps vanishing: %w", a.ID, ports.ErrConflict)
}

// GetAttachment implements ports.AttachmentStore.
func (s *AttachmentStore) GetAttachment(ctx context.Context, orgID, id string) (*attachment.Attachment, error) {
	var row attachmentRow
	if err := s.db.NewSelect().Model(&row).Where("id = ? AND org_id = ?", id, orgID).Scan(ctx); err != nil {
		return nil, notFound(err, "get attachment "+id)
	}
	return row.attachment(), nil
}

// GetAttachments reads them in one query and puts them in the order of ids.
func (s *AttachmentStore) GetAttachments(ctx context.Context, orgID string, ids []string) ([]*attachment.Attachment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []attachmentRow
	if err := s.db.NewSelect().Model(&rows).Where("org_id = ? AND id IN (?)", orgID, bun.In(ids)).Scan(ctx); err != nil {
		return nil, fail(err, "get attachments")
	}
	byID := make(map[string]*attachmentRow, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}
	out := make([]*attachment.Attachment, 0, len(rows))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r.attachment())
		}
	}
	return out, nil
}

// ListAttachments pages by (created_at, id) descending.
func (s *AttachmentStore) ListAttachments(ctx context.Context, orgID string, p page.Request) (page.Result[*attachment.Attachment], error) {
	var rows []attachmentRow
	q := s.db.NewSelect().Model(&rows).Where("org_id = ?", orgID)
	size := pageSize(p.Size)
	if p.After != nil {
		q.Where("(created_at, id) < (?, ?)", utc(p.After.CreatedAt), p.After.ID)
	} else if p.Offset > 0 {
		q.Offset(int64(p.Offset))
	}
	if err := q.Order("created_at DESC", "id DESC").Limit(int64(size + 1)).Scan(ctx); err != nil {
		return page.Result[*attachment.Attachment]{}, fail(err, "list attachments")
	}
	total, err := s.db.NewSelect().Model((*attachmentRow)(nil)).Where("org_id = ?", orgID).Count(ctx)
	if err != nil {
		return page.Result[*attachment.Attachment]{}, fail(err, "count attachments")
	}
	res := page.Result[*attachment.Attachment]{Total: int(total), Items: make([]*attachment.Attachment, 0, len(rows))}
	for i := range rows {
		res.Items = append(res.Items, rows[i].attachment())
	}
	if len(res.Items) > size {
		res.Items = res.Items[:size]
		l := res.Items[size-1]
		res.Next = page.Cursor{CreatedAt: l.CreatedAt, ID: l.ID}.Encode()
	}
	return res, nil
}

// DeleteAttachment implements ports.AttachmentStore.
func (s *AttachmentStore) DeleteAttachment(ctx context.Context, orgID, id string) (*attachment.Attachment, error) {
	var rows []attachmentRow
	if err := s.db.NewRaw(`DELETE FROM attachments WHERE id = ? AND org_id = ? RETURNING *`, id, orgID).Scan(ctx, &rows); err != nil {
		return nil, fail(err, "delete attachment "+id)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("postgres: delete attachment %s: %w", id, ports.ErrNotFound)
	}
	return rows[0].attachment(), nil
}

type attachmentPolicyRow struct {
	bun.BaseModel `bun:"table:attachment_policies"`

	MediaType  string    `bun:"media_type,pk"`
	Label      string    `bun:"label,notnull"`
	Mode       string    `bun:"mode,notnull"`
	Enabled    bool      `bun:"enabled,notnull"`
	Capability string    `bun:"capability,notnull"`
	Extract    bool      `bun:"extract,notnull"`
	UpdatedAt  time.Time `bun:"updated_at,notnull"`
}

// AttachmentPolicies implements ports.AttachmentStore.
func (s *AttachmentStore) AttachmentPolicies(ctx context.Context) ([]attachment.Policy, error) {
	var rows []attachmentPolicyRow
	if err := s.db.NewSelect().Model(&rows).Order("media_type").Scan(ctx); err != nil {
		return nil, fail(err, "list attachment policies")
	}
	out := make([]attachment.Policy, 0, len(rows))
	for _, r := range rows {
		out = append(out, attachment.Policy{MediaType: r.MediaType, Label: r.Label, Mode: attachment.Mode(r.Mode), Enabled: r.Enabled,
			Capability: r.Capability, Extract: r.Extract})
	}
	return out, nil
}

// SaveAttachmentPolicy implements ports.AttachmentStore.
func (s *AttachmentStore) SaveAttachmentPolicy(ctx context.Context, p attachment.Policy) error {
	row := &attachmentPolicyRow{MediaType: p.MediaType, Label: p.Label, Mode: string(p.Mode), Enabled: p.Enabled,
		Capability: p.Capability, Extract: p.Extract, UpdatedAt: utc(time.Now())}
	_, err := s.db.NewInsert().Model(row).On("CONFLICT (media_type) DO UPDATE").
		Set("label = EXCLUDED.label, mode = EXCLUDED.mode, enabled = EXCLUDED.enabled").
		Set("capability = EXCLUDED.capability, extract = EXCLUDED.extract, updated_at = EXCLUDED.updated_at").Exec(ctx)
	if err != nil {
		return fail(err, "save attachment policy "+p.MediaType)
	}
	return nil
}
