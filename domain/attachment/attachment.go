// Package attachment holds the rules of attachments (issue 29): the file an
// organization uploads once and names in later jobs' attachment_ids, the
// policy of its media type, and what a model needs to read it.
package attachment

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Mode is how a media type's files reach a model.
type Mode string

// The modes of REFERENCE.md "Attachments".
const (
	// Binary files go to the model as their raw bytes; only a model with
	// the type's capability can read them.
	Binary Mode = "binary"
	// InlineText files are turned into text once, at upload, and that text
	// is inlined into prompts, so any model can read them.
	InlineText Mode = "inline_text"
)

// ExtractionKind says how an upload's content is fed to models.
type ExtractionKind string

// The extraction kinds of AttachmentUploadResponse.
const (
	// KindBinary: the raw bytes only.
	KindBinary ExtractionKind = "binary"
	// KindInlineText: a text type, decoded as it is.
	KindInlineText ExtractionKind = "inline_text"
	// KindExtracted: text extracted from a document (inlined for any model,
	// or the fallback of a binary type for a model without its capability).
	KindExtracted ExtractionKind = "extracted"
)

// The capabilities a binary attachment can require of a model (the model
// catalog's names).
const (
	CapPDF    = "supports_pdf_input"
	CapVision = "supports_vision"
	CapAudio  = "supports_audio_input"
)

// Attachment is one stored file of an organization. Its bytes are in the
// blob store under BlobKey; everything else is metadata in the database.
type Attachment struct {
	ID        string
	OrgID     string
	Filename  string
	MediaType string
	SizeBytes int64
	// SHA256 is the hex sha256 of the bytes; an organization holds one
	// attachment per hash (uploads are deduplicated on it).
	SHA256 string
	Mode   Mode
	Kind   ExtractionKind
	// Capability is what a model needs to read the raw bytes ("" for an
	// inline-text type).
	Capability string
	// Text is the text extracted at upload ("" when there is none): what an
	// inline-text type is inlined as, and a binary type's fallback.
	Text string
	// BlobKey names the bytes in the blob store.
	BlobKey   string
	CreatedAt time.Time
}

// ExtractedChars is the number of characters of the cached text.
func (a *Attachment) ExtractedChars() int { return utf8.RuneCountInString(a.Text) }

// Loaded is an attachment with its bytes, as a job read it when it
// started: a job holds what it read, so deleting the attachment later does
// not break it.
type Loaded struct {
	Attachment
	Data []byte
}

// Policy is an administrator's rule for one media type.
type Policy struct {
	MediaType string
	// Label is the name shown for the type ("PDF document").
	Label string
	Mode  Mode
	// Enabled types are accepted at upload; a disabled one is refused.
	Enabled bool
	// Capability is what a model needs for the raw bytes of a Binary type.
	Capability string
	// Extract says the type has a text extractor (always true for
	// InlineText; for Binary, the extracted text is the fallback).
	Extract bool
}

// The errors of intake; each is a 4xx naming the file.
var (
	ErrEmpty        = errors.New("the file is empty")
	ErrTooLarge     = errors.New("the file is larger than the limit")
	ErrDisabled     = errors.New("this type of file is not accepted")
	ErrBadFilename  = errors.New("invalid filename")
	ErrBomb         = errors.New("the document expands past the limits")
	ErrUnreadable   = errors.New("the document cannot be read")
	ErrNoCapability = errors.New("the model cannot read the attachment")
)

// MaxFilename is the longest filename kept, in bytes.
const MaxFilename = 255

// CheckFilename refuses a filename a download could not hand back safely:
// empty, too long, invalid UTF-8, a path (separators, "." or ".."), or one
// with control characters (NUL included).
func CheckFilename(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the filename is empty", ErrBadFilename)
	case len(name) > MaxFilename:
		return fmt.Errorf("%w: longer than %d bytes", ErrBadFilename, MaxFilename)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not valid UTF-8", ErrBadFilename)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%w: it holds a path separator", ErrBadFilename)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not a file name", ErrBadFilename, name)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == utf8.RuneError || (r >= 0xD800 && r <= 0xDFFF) {
			return fmt.Errorf("%w: it holds a control character", ErrBadFilename)
		}
	}
	return nil
}

// DefaultPolicies are the types enabled out of the box (REFERENCE.md):
// PDF and images binary, text decoded as it is, documents extracted. The
// legacy .doc has no sound pure-Go extractor, so it is listed but off,
// and so is GIF.
func DefaultPolicies() []Policy {
	bin := func(mt, label, capability string, extract bool) Policy {
		return Policy{MediaType: mt, Label: label, Mode: Binary, Enabled: true, Capability: capability, Extract: extract}
	}
	text := func(mt, label string) Policy {
		return Policy{MediaType: mt, Label: label, Mode: InlineText, Enabled: true, Extract: true}
	}
	return []Policy{
		bin("application/pdf", "PDF document", CapPDF, true),
		bin("image/png", "PNG image", CapVision, false),
		bin("image/jpeg", "JPEG image", CapVision, false),
		bin("image/webp", "WebP image", CapVision, false),
		text("text/plain", "Plain text"),
		text("text/markdown", "Markdown"),
		text("text/html", "HTML page"),
		text("text/csv", "CSV table"),
		text("application/rtf", "Rich Text document"),
		text("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "Word document (.docx)"),
		text("application/vnd.oasis.opendocument.text", "OpenDocument text (.odt)"),
		text("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "Excel workbook (.xlsx)"),
		text("application/vnd.openxmlformats-officedocument.presentationml.presentation", "PowerPoint deck (.pptx)"),
		text("application/epub+zip", "EPUB book"),
		{MediaType: "application/msword", Label: "Legacy Word document (.doc)", Mode: InlineText, Enabled: false},
		// GIF is recognised but off, as in the reference; an administrator
		// can enable it.
		{MediaType: "image/gif", Label: "GIF image", Mode: Binary, Enabled: false, Capability: CapVision},
	}
}

// PolicyFor is the policy of media type mt among ps; false when the type
// has none (such a file is refused like a disabled type).
func PolicyFor(ps []Policy, mt string) (Policy, bool) {
	for _, p := range ps {
		if p.MediaType == mt {
			return p, true
		}
	}
	return Policy{}, false
}

// Classify fills a's mode, kind and capability from its type's policy and
// the text extracted from it (text may be empty).
func Classify(a *Attachment, p Policy, text string) {
	a.Mode, a.Text = p.Mode, text
	switch {
	case p.Mode == Binary:
		a.Kind, a.Capability = KindBinary, p.Capability
		if text != "" {
			a.Kind = KindExtracted
		}
	case strings.HasPrefix(a.MediaType, "text/plain") || strings.HasPrefix(a.MediaType, "text/markdown"):
		a.Kind, a.Capability = KindInlineText, ""
	default:
		a.Kind, a.Capability = KindExtracted, ""
	}
}

// Needs are the capabilities a model must have to read atts as binaries
// (each once, in first-seen order). An attachment with a text fallback
// still needs its capability here: Readable decides whether the fallback
// may stand in.
func Needs(atts []Attachment) []string {
	var out []string
	for _, a := range atts {
		if a.Mode == Binary && a.Capability != "" && !contains(out, a.Capability) {
			out = append(out, a.Capability)
		}
	}
	return out
}

// Readable says whether a model with capabilities has can read every one
// of atts: a binary one needs its capability, unless it has extracted text
// to fall back on. The second result names the first capability missing.
func Readable(atts []Attachment, has func(capability string) bool) (bool, string) {
	for _, a := range atts {
		if a.Mode != Binary || a.Capability == "" || has(a.Capability) || a.Text != "" {
			continue
		}
		return false, a.Capability
	}
	return true, ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Coherence is how two or more attachments of a sample or schema
// generation relate (the attachment_coherence event).
type Coherence string

// The coherence modes.
const (
	SingleEntity    Coherence = "single_entity"
	InstancesOfType Coherence = "instances_of_type"
	Incoherent      Coherence = "incoherent"
)
