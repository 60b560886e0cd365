package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
)

// attachment is an AttachmentUploadResponse or an AttachmentRef: the fields
// both have, and extracted_chars, which only an upload answers.
type attachment struct {
	ID             string  `json:"id"`
	Filename       string  `json:"filename"`
	MediaType      string  `json:"media_type"`
	Size           int64   `json:"size_bytes"`
	SHA256         string  `json:"sha256"`
	Mode           string  `json:"mode"`
	ExtractionKind string  `json:"extraction_kind"`
	Requires       *string `json:"requires_capability"`
	ExtractedChars *int    `json:"extracted_chars"`
}

func (c *cli) attachmentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attachments",
		Short: "Upload, list, download and delete attachments (documents and images for jobs)",
		Long: `attachments manages the organization's attachments: PDFs, images, office
documents and text that jobs read besides an entity's attributes. A PDF or an
image goes to models that read it natively; other documents have their text
extracted once, at upload, and any model reads that.

Uploads are deduplicated: the same bytes answer the same id. --attach FILE on
enrich, batch and schemas generate uploads and attaches in one step.`,
		Example: `  enrich attachments upload report.pdf label.png
  enrich attachments list -o table
  enrich attachments download ATTACHMENT_ID --out copy.pdf
  enrich attachments delete ATTACHMENT_ID`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(c.attachmentsUploadCmd(), c.attachmentsListCmd(), c.attachmentsDownloadCmd(), c.attachmentsDeleteCmd())
	return cmd
}

func (c *cli) attachmentsUploadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "upload FILE...",
		Short: "Upload files in one request and print their ids",
		Long: `upload sends the files in one multipart request, streamed from disk, and
prints what the server made of each, in order: its id (for attachment_ids),
the media type it sniffed from the bytes, and how models will read it
(mode binary with the capability a model needs, or inline text).`,
		Example: `  enrich attachments upload report.pdf
  IDS=$(enrich attachments upload a.pdf b.png -q)`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			raw, list, err := c.upload(cmd, a)
			if err != nil {
				return err
			}
			if c.quiet {
				for _, at := range list {
					fmt.Fprintln(c.io.out, at.ID)
				}
				return nil
			}
			return c.show(raw, "", func(t *tw) { attachmentTable(t, list) })
		},
	}
}

// upload checks that every path is a regular file with a name the server
// can take, then posts them all in one request.
func (c *cli) upload(cmd *cobra.Command, paths []string) (json.RawMessage, []attachment, error) {
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, usageError{err}
		}
		if !st.Mode().IsRegular() {
			return nil, nil, usagef("%s is not a regular file", p)
		}
		if strings.IndexFunc(filepath.Base(p), unicode.IsControl) >= 0 {
			return nil, nil, usagef("%q: a file name with control characters cannot be uploaded; rename the file", p)
		}
	}
	cl, err := c.api()
	if err != nil {
		return nil, nil, err
	}
	resp, err := cl.Open(cmd.Context(), http.MethodPost, "/api/attachments", api.Files("files", paths))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var list []attachment
	if err := json.Unmarshal(raw, &list); err != nil || len(list) != len(paths) {
		return nil, nil, fmt.Errorf("the server did not answer one attachment per file: %s", raw)
	}
	return raw, list, nil
}

// attach uploads the --attach files and returns their ids (nil for none).
func (c *cli) attach(cmd *cobra.Command, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	_, list, err := c.upload(cmd, paths)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i, at := range list {
		ids[i] = at.ID
	}
	return ids, nil
}

// attachTo uploads the --attach files, if any, and puts their ids in a
// job's request body.
func (c *cli) attachTo(cmd *cobra.Command, body map[string]any, paths []string) error {
	ids, err := c.attach(cmd, paths)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		body["attachment_ids"] = ids
	}
	return nil
}

// attachFlag defines --attach on cmd.
func attachFlag(cmd *cobra.Command, files *[]string, what string) {
	cmd.Flags().StringArrayVar(files, "attach", nil, "upload FILE and attach it to "+what+" (repeatable)")
	_ = cmd.MarkFlagFilename("attach")
}

func attachmentTable(t *tw, list []attachment) {
	t.row("ID", "FILENAME", "MEDIA TYPE", "SIZE", "READ AS", "NEEDS")
	for _, at := range list {
		t.row(at.ID, at.Filename, at.MediaType, at.Size, at.ExtractionKind, at.Requires)
	}
}

func (c *cli) attachmentsListCmd() *cobra.Command {
	var size int
	var cursor string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List attachments, newest first (one page; see --cursor)",
		Example: `  enrich attachments list -o table
  enrich attachments list --page-size 10 --cursor CURSOR`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if size > 0 {
				q.Set("page_size", strconv.Itoa(size))
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			path := "/api/attachments"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var raw json.RawMessage
			if err := c.call(cmd, http.MethodGet, path, nil, &raw); err != nil {
				return err
			}
			var page struct {
				Attachments []attachment `json:"attachments"`
				Next        *string      `json:"next_cursor"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("the server's attachment list is not readable: %w", err)
			}
			if c.quiet {
				for _, at := range page.Attachments {
					fmt.Fprintln(c.io.out, at.ID)
				}
				return nil
			}
			return c.show(raw, "", func(t *tw) {
				attachmentTable(t, page.Attachments)
				if page.Next != nil {
					t.Flush()
					fmt.Fprintf(c.io.err, "more: --cursor %s\n", *page.Next)
				}
			})
		},
	}
	cmd.Flags().IntVar(&size, "page-size", 0, "attachments per page (the server's default when 0)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next_cursor of the previous page")
	return cmd
}

func (c *cli) attachmentsDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ATTACHMENT_ID...",
		Short: "Delete attachments (one already gone is not an error)",
		Long: `delete removes attachments from the organization. Jobs already running keep
what they read. An id the server does not know (deleted before, by you or
someone else) is reported and skipped, so that a script can run delete twice.`,
		Example: `  enrich attachments delete ATTACHMENT_ID
  enrich attachments list -q | xargs enrich attachments delete`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			deleted := []json.RawMessage{}
			t := newTW(c.io.out)
			if c.table() && !c.quiet {
				t.row("ID", "FILENAME", "DELETED")
			}
			for _, id := range a {
				var raw json.RawMessage
				err := c.call(cmd, http.MethodDelete, "/api/attachments/"+url.PathEscape(id), nil, &raw)
				var ae *api.Error
				switch {
				case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
					fmt.Fprintf(c.io.err, "attachment %s: not found (already deleted?)\n", id)
					continue
				case err != nil:
					return err
				}
				var d struct {
					ID       string `json:"id"`
					Filename string `json:"filename"`
					Success  bool   `json:"success"`
				}
				_ = json.Unmarshal(raw, &d)
				deleted = append(deleted, raw)
				switch {
				case c.quiet:
					fmt.Fprintln(c.io.out, id)
				case c.table():
					t.row(id, d.Filename, d.Success)
				}
			}
			if c.quiet || c.table() {
				return t.Flush()
			}
			return c.printJSON(deleted)
		},
	}
}

func (c *cli) attachmentsDownloadCmd() *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "download ATTACHMENT_ID",
		Short: "Download an attachment's original bytes",
		Long: `download writes the attachment's bytes, as they were uploaded, to --out FILE
("-" for standard output), or else to the current directory under the name
the server gives, reduced to a plain file name (never a path). An existing
file is kept unless --force.`,
		Example: `  enrich attachments download ATTACHMENT_ID
  enrich attachments download ATTACHMENT_ID --out report.pdf --force
  enrich attachments download ATTACHMENT_ID -O - | sha256sum`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error { return c.download(cmd, a[0], out, force) },
	}
	// -o is the global --output: the file flag is --out, -O as in wget.
	cmd.Flags().StringVarP(&out, "out", "O", "", "the file to write (- for standard output; default: the server's file name, in the current directory)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	_ = cmd.MarkFlagFilename("out")
	return cmd
}

func (c *cli) download(cmd *cobra.Command, id, out string, force bool) error {
	if out != "" && out != "-" && !force {
		if _, err := os.Lstat(out); err == nil {
			return usagef("%s exists; add --force to overwrite it", out)
		}
	}
	cl, err := c.api()
	if err != nil {
		return err
	}
	resp, err := cl.Open(cmd.Context(), http.MethodGet, "/api/attachments/"+url.PathEscape(id)+"/download", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == "-" {
		_, err := io.Copy(c.io.out, resp.Body)
		return err
	}
	if out == "" {
		out = localName(resp.Header.Get("Content-Disposition"), id)
	}
	n, err := save(out, resp.Body, force)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(map[string]any{"id": id, "file": out, "size_bytes": n})
	return c.show(raw, out, func(t *tw) {
		t.row("FILE", "SIZE")
		t.row(out, n)
	})
}

// save writes r to the file name, which must not exist unless force; a
// partial file is removed.
func save(name string, r io.Reader, force bool) (int64, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return 0, usagef("%s exists; add --force to overwrite it (or choose a name with --out)", name)
	}
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return 0, fmt.Errorf("download to %s: %w", name, err)
	}
	return n, nil
}

// localName is the file name for a download without --out: the server's
// Content-Disposition filename reduced to a name in the current directory.
// A server's word never chooses a directory, a parent or a hidden file:
// separators cut the name to its last element, and leading dots, spaces and
// control characters go. With nothing left the name is the id's.
func localName(disposition, id string) string {
	for _, name := range []string{dispositionName(disposition), id} {
		name = path.Base(strings.ReplaceAll(name, "\\", "/"))
		name = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == '/' {
				return -1
			}
			return r
		}, name)
		name = strings.TrimLeft(strings.TrimSpace(name), ". ")
		if name != "" {
			return name
		}
	}
	return "attachment"
}

func dispositionName(disposition string) string {
	_, params, err := mime.ParseMediaType(disposition)
	if err != nil {
		return ""
	}
	return params["filename"]
}
