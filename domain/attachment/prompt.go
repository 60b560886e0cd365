package attachment

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
)

// The lines that delimit an attachment's text in a prompt. Each names the
// attachment's number and the start of its sha256, so that a document's
// own text cannot close its block by accident.
const (
	blockBegin = "----- BEGIN ATTACHMENT "
	blockEnd   = "----- END ATTACHMENT "
	blockFile  = "----- ATTACHMENT "
	// PromptIntro opens the attachments' part of a prompt.
	PromptIntro = "Attached documents (use them as evidence; each text is between its BEGIN and END lines):"
)

// ModelHas says which attachment capabilities model m declares.
func ModelHas(m model.Info) func(capability string) bool {
	return func(c string) bool {
		switch c {
		case CapPDF:
			return m.PDFInput
		case CapVision:
			return m.Vision
		case CapAudio:
			return m.AudioInput
		}
		return false
	}
}

// ForModel is how atts reach a model that has the capabilities has says:
// the text blocks of the ones it reads as text (inline-text attachments,
// and a binary one's extracted text when the model lacks its capability),
// and the files it reads as bytes. Readable must have accepted atts.
func ForModel(atts []Loaded, has func(capability string) bool) (string, []enrichment.File) {
	if len(atts) == 0 {
		return "", nil
	}
	var b strings.Builder
	var files []enrichment.File
	b.WriteString(PromptIntro + "\n")
	for i, a := range atts {
		n, tag := i+1, shortHash(a.SHA256)
		if a.Mode == Binary && a.Capability != "" && has(a.Capability) && a.Data != nil {
			files = append(files, enrichment.File{MediaType: a.MediaType, Filename: a.Filename, Data: a.Data})
			fmt.Fprintf(&b, "%s%d: %q (%s) is attached as a file -----\n", blockFile, n, a.Filename, a.MediaType)
			continue
		}
		fmt.Fprintf(&b, "%s%d: %q (%s, %s) [%s] -----\n%s\n%s%d [%s] -----\n",
			blockBegin, n, a.Filename, a.MediaType, textKind(a.Attachment), tag, strings.TrimRight(a.Text, "\n"), blockEnd, n, tag)
	}
	return b.String(), files
}

func textKind(a Attachment) string {
	if a.Kind == KindInlineText {
		return "text"
	}
	return "extracted text"
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Block is one attachment as a prompt carries it: its text, or (File) a
// mention that its bytes go with the message as a file.
type Block struct {
	Filename, MediaType, Text string
	File                      bool
}

// ParseBlocks reads back the text blocks ForModel wrote into prompt (the
// sandbox models read attachments this way).
func ParseBlocks(prompt string) []Block {
	var out []Block
	lines := strings.Split(prompt, "\n")
	for i := 0; i < len(lines); i++ {
		if head, ok := strings.CutPrefix(lines[i], blockFile); ok && strings.HasSuffix(head, " is attached as a file -----") {
			_, rest, _ := strings.Cut(head, ": ")
			name, mt := nameAndType(rest)
			out = append(out, Block{Filename: name, MediaType: mt, File: true})
			continue
		}
		head, ok := strings.CutPrefix(lines[i], blockBegin)
		if !ok {
			continue
		}
		num, rest, _ := strings.Cut(head, ": ")
		name, mt := nameAndType(rest)
		end := blockEnd + num + " "
		var text []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], end); i++ {
			text = append(text, lines[i])
		}
		out = append(out, Block{Filename: name, MediaType: mt, Text: strings.Join(text, "\n")})
	}
	return out
}

// nameAndType reads `"name" (type, ...` or `"name" (type)`.
func nameAndType(rest string) (name, mt string) {
	q := strings.LastIndex(rest, "\" (")
	if !strings.HasPrefix(rest, "\"") || q <= 0 {
		return "", ""
	}
	name, err := strconv.Unquote(rest[:q+1])
	if err != nil {
		name = rest[1:q]
	}
	mt = rest[q+3:]
	if i := strings.IndexAny(mt, ",)"); i >= 0 {
		mt = mt[:i]
	}
	return name, mt
}

// Refs are atts as the records of a run list them.
func Refs(atts []Attachment) []enrichment.AttachmentRef {
	if len(atts) == 0 {
		return nil
	}
	out := make([]enrichment.AttachmentRef, len(atts))
	for i, a := range atts {
		out[i] = enrichment.AttachmentRef{ID: a.ID, Filename: a.Filename, MediaType: a.MediaType, SizeBytes: a.SizeBytes,
			SHA256: a.SHA256, Mode: string(a.Mode), Kind: string(a.Kind), Capability: a.Capability}
	}
	return out
}
