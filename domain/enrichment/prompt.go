package enrichment

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one chat message of a prompt.
type Message struct {
	Role    string // system, user or assistant
	Content string
	// Files go to the model with a user message as their raw bytes, after
	// Content (attachments a model reads natively: PDFs, images, audio).
	Files []File
}

// File is a file's bytes given to a model with a message.
type File struct {
	MediaType string
	Filename  string
	Data      []byte
}

// Prompt builds the first messages of one expertise call.
func Prompt(schemaName string, entity json.RawMessage, d Domain) []Message {
	sub, _ := json.Marshal(d.Schema)
	return PromptWith(schemaName, entity, d, sub)
}

// PromptWith is Prompt with the domain's schema already encoded (sub, as
// json.Marshal writes d.Schema), for a caller that keeps it.
func PromptWith(schemaName string, entity json.RawMessage, d Domain, sub []byte) []Message {
	var sys strings.Builder
	sys.WriteString("You are an expert data researcher")
	if d.Key != "all" && d.Name != "" {
		fmt.Fprintf(&sys, " specialised in %s", d.Name)
		if d.Description != "" {
			fmt.Fprintf(&sys, " (%s)", d.Description)
		}
	}
	sys.WriteString(". Enrich the entity with facts you are confident about. " +
		"Answer with one JSON object that validates against the JSON Schema given, and nothing else. " +
		"Use null for a nullable property you cannot establish; never invent values.")
	var user strings.Builder
	fmt.Fprintf(&user, "Schema %q, properties %s.\n", schemaName, strings.Join(d.Properties, ", "))
	fmt.Fprintf(&user, "JSON Schema:\n%s\n", sub)
	fmt.Fprintf(&user, "Known attributes of the entity:\n%s\n", entity)
	return []Message{{Role: "system", Content: sys.String()}, {Role: "user", Content: user.String()}}
}

// Retry extends a conversation after an invalid answer, feeding the
// validation error back to the model.
func Retry(msgs []Message, answer string, problem error) []Message {
	out := make([]Message, 0, len(msgs)+2)
	out = append(out, msgs...)
	return append(out,
		Message{Role: "assistant", Content: answer},
		Message{Role: "user", Content: "That answer was rejected: " + problem.Error() +
			". Reply again with only the corrected JSON object."},
	)
}

// WithAttachments gives a prompt its attachments: text (the delimited
// blocks of the ones read as text) after the first user message's content,
// and files (the ones read as bytes) with it. Retries keep that message,
// so every attempt sees the attachments.
func WithAttachments(msgs []Message, text string, files []File) []Message {
	if text == "" && len(files) == 0 {
		return msgs
	}
	out := append([]Message(nil), msgs...)
	for i := range out {
		if out[i].Role != "user" {
			continue
		}
		if text != "" {
			out[i].Content = strings.TrimRight(out[i].Content, "\n") + "\n\n" + text
		}
		out[i].Files = append(append([]File(nil), out[i].Files...), files...)
		return out
	}
	return append(out, Message{Role: "user", Content: text, Files: files})
}
