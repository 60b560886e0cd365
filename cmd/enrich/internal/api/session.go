package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Session is a login kept between runs of the CLI: the server it belongs to
// and the tokens /api/auth/login (or register) returned.
type Session struct {
	URL          string    `json:"url"`
	Email        string    `json:"email"`
	Organization string    `json:"organization"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token"`
	ExpiresAt    time.Time `json:"expires_at"`

	path string
	mu   sync.Mutex
}

// Tokens is the token part of the server's session answer.
type Tokens struct {
	User struct {
		Email string `json:"email"`
	} `json:"user"`
	Organization struct {
		Name string `json:"name"`
	} `json:"organization"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
}

// SessionPath is where the session is stored: enrich/session.json under the
// user's configuration directory (os.UserConfigDir).
func SessionPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the session: %w", err)
	}
	return filepath.Join(dir, "enrich", "session.json"), nil
}

// LoadSession reads the stored session; nil, nil when there is none.
func LoadSession(path string) (*Session, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &Session{path: path}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("session file %s is damaged (log in again): %w", path, err)
	}
	return s, nil
}

// NewSession makes a session of the server at url from its answer, to be
// stored at path.
func NewSession(path, url string, t Tokens) *Session {
	s := &Session{URL: url, path: path}
	s.set(t)
	return s
}

func (s *Session) set(t Tokens) {
	if t.User.Email != "" {
		s.Email = t.User.Email
	}
	if t.Organization.Name != "" {
		s.Organization = t.Organization.Name
	}
	s.AccessToken, s.RefreshToken = t.AccessToken, t.RefreshToken
	s.ExpiresAt = time.Now().Add(time.Duration(t.ExpiresIn) * time.Second).UTC()
}

// Save writes the session, readable by its owner only (0600, in a 0700
// directory).
func (s *Session) Save() error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	// WriteFile keeps the mode of a file that exists.
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// Delete removes the stored session.
func (s *Session) Delete() error {
	err := os.Remove(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Apply implements Credentials: the access token, refreshed first when it
// expires within 30 seconds.
func (s *Session) Apply(ctx context.Context, c *Client, req *http.Request) error {
	s.mu.Lock()
	stale := time.Until(s.ExpiresAt) < 30*time.Second
	s.mu.Unlock()
	if stale {
		if _, err := s.Refresh(ctx, c); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Header.Set("Authorization", "Bearer "+s.AccessToken)
	return nil
}

// Refresh implements Credentials: it exchanges the refresh token (which
// rotates) for new tokens and stores them.
func (s *Session) Refresh(ctx context.Context, c *Client) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.RefreshToken == "" {
		return false, nil
	}
	anon := &Client{BaseURL: c.BaseURL, HTTP: c.HTTP}
	var t Tokens
	if err := anon.Do(ctx, http.MethodPost, "/api/auth/refresh", map[string]string{"refresh_token": s.RefreshToken}, &t); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
			return false, &Error{Status: e.Status, Code: e.Code,
				Detail: "the stored session has expired or was revoked: log in again with `enrich login`"}
		}
		return false, fmt.Errorf("refresh the session: %w", err)
	}
	s.set(t)
	return true, s.Save()
}
