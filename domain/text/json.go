package text

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckJSON scans a JSON document's raw bytes and returns the first string or
// object key, in document order, that holds a NUL (raw or \u0000), a
// \uD800-\uDFFF escape that is not half of a valid surrogate pair, or bytes
// that are not UTF-8; ok when there is none. It must run on the raw bytes:
// decoding has already replaced lone surrogates and invalid bytes by U+FFFD.
//
// CheckJSON judges text only. On a document that is not valid JSON it stops
// where it loses track and reports what it found before (the decoder then
// names the syntax error); it never panics, and it runs in time linear in
// len(doc) with memory bounded by the nesting depth, which it caps where
// encoding/json does (10000).
func CheckJSON(doc []byte) (Fault, bool) {
	s := scanner{doc: doc}
	return s.run()
}

// maxDepth is encoding/json's nesting limit: deeper documents do not decode,
// so the scan need not hold their frames.
const maxDepth = 10000

// frame is one open array or object.
type frame struct {
	array bool
	index int    // the current element of an array
	key   string // the current key of an object, as shown in paths
}

type scanner struct {
	doc   []byte
	i     int
	stack []frame
	fault Fault
	found bool // fault holds the first fault
}

type state int

const (
	stValue      state = iota // a value is due
	stValueOrEnd              // just after '[': a value or ']'
	stKeyOrEnd                // just after '{': a key or '}'
	stKey                     // after ',' in an object: a key
	stAfter                   // after a value: ',', ']', '}' or the end
	stDone                    // a fault was found, or the scan lost track
)

// run steps through the document one token at a time. The transitions that
// every token takes stay inline here; strings and keys, which cost a
// scanString each anyway, have their own methods.
func (s *scanner) run() (Fault, bool) {
	st := stValue
	for st != stDone {
		s.skipSpace()
		if s.i >= len(s.doc) {
			break
		}
		c := s.doc[s.i]
		switch st {
		case stValue:
			switch c {
			case '{', '[':
				if len(s.stack) >= maxDepth {
					return Fault{}, true
				}
				s.stack = append(s.stack, frame{array: c == '['})
				s.i++
				st = stKeyOrEnd
				if c == '[' {
					st = stValueOrEnd
				}
			case '"':
				st = s.stringValue()
			case ']', '}', ',', ':':
				return Fault{}, true // lost: the decoder reports the syntax
			default:
				// A number or a literal; it holds no text.
				for s.i < len(s.doc) && !delimiter(s.doc[s.i]) {
					s.i++
				}
				st = stAfter
			}
		case stValueOrEnd:
			st = stValue
			if c == ']' {
				s.pop()
				st = stAfter
			}
		case stKeyOrEnd, stKey:
			if c == '}' && st == stKeyOrEnd {
				s.pop()
				st = stAfter
				continue
			}
			st = s.key()
		case stAfter:
			if len(s.stack) == 0 {
				st = stValue // trailing values are the decoder's to refuse
				continue
			}
			top := &s.stack[len(s.stack)-1]
			switch {
			case c == ',' && top.array:
				top.index++
				s.i++
				st = stValue
			case c == ',':
				s.i++
				st = stKey
			case c == ']' && top.array, c == '}' && !top.array:
				s.pop()
			default:
				return Fault{}, true
			}
		}
	}
	return s.fault, !s.found
}

// lost ends the scan without a fault: the document is not valid JSON here,
// and the decoder will name the syntax error.
const lost = stDone

// stringValue scans the string value whose quote is at doc[i].
func (s *scanner) stringValue() state {
	str := scanString(s.doc, s.i, false)
	if str.fault {
		return s.found1(Fault{Path: s.path(len(s.stack)), Reason: str.reason})
	}
	if str.malformed {
		return lost
	}
	s.i = str.end
	return stAfter
}

// key scans the object key whose quote should be at doc[i], and its colon.
func (s *scanner) key() state {
	if s.doc[s.i] != '"' {
		return lost
	}
	str := scanString(s.doc, s.i, true)
	if str.fault {
		path := str.text
		if len(s.stack) > 1 {
			path = s.path(len(s.stack)-1) + "." + path
		}
		return s.found1(Fault{Path: path, Key: true, Reason: str.reason})
	}
	if str.malformed {
		return lost
	}
	s.stack[len(s.stack)-1].key = str.text
	s.i = str.end
	s.skipSpace()
	if s.i >= len(s.doc) || s.doc[s.i] != ':' {
		return lost
	}
	s.i++
	return stValue
}

// found1 records the scan's one fault and ends it.
func (s *scanner) found1(f Fault) state {
	s.fault, s.found = f, true
	return stDone
}

func (s *scanner) pop() {
	s.stack = s.stack[:len(s.stack)-1]
	s.i++
}

// path is the dotted path of the value that the first n open containers
// lead to.
func (s *scanner) path(n int) string {
	var b strings.Builder
	for i, f := range s.stack[:n] {
		if i > 0 {
			b.WriteByte('.')
		}
		if f.array {
			b.WriteString(strconv.Itoa(f.index))
		} else {
			b.WriteString(f.key)
		}
	}
	return b.String()
}

func (s *scanner) skipSpace() {
	for s.i < len(s.doc) {
		switch s.doc[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func delimiter(c byte) bool {
	switch c {
	case ',', ']', '}', ':', '"', '[', '{', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// scanned is one string token.
type scanned struct {
	end int // index just past the closing quote
	// text is the decoded string with refused parts written as escapes
	// (only when asked for).
	text      string
	fault     bool
	reason    Reason // the first fault's
	malformed bool   // unterminated or a bad escape
}

// scanString scans the string token whose opening quote is at doc[i]. When
// text is false it stops at the first fault.
func scanString(doc []byte, i int, text bool) scanned {
	s := stringScan{doc: doc, text: text}
	j := i + 1
	for j < len(doc) {
		c := doc[j]
		switch {
		case c == '"':
			s.out.end = j + 1
			s.out.text = s.b.String()
			return s.out
		case c == '\\':
			var more bool
			if j, more = s.escape(j); !more {
				return s.out
			}
		case c == 0:
			if !s.note(NUL, `\u0000`) {
				return s.out
			}
			j++
		case c < utf8.RuneSelf:
			if text {
				s.b.WriteByte(c)
			}
			j++
		default:
			r, n := utf8.DecodeRune(doc[j:])
			if r == utf8.RuneError && n == 1 {
				if !s.note(InvalidUTF8, `\x`+strconv.FormatUint(uint64(c)|0x100, 16)[1:]) {
					return s.out
				}
			} else if text {
				s.b.Write(doc[j : j+n])
			}
			j += n
		}
	}
	s.out.malformed = true
	return s.out
}

// stringScan is the state of one scanString.
type stringScan struct {
	doc  []byte
	text bool // build out.text
	b    strings.Builder
	out  scanned
}

// note records a fault and writes it into the text as shown; it says whether
// to go on, which is only to finish the text.
func (s *stringScan) note(r Reason, shown string) bool {
	if !s.out.fault {
		s.out.fault, s.out.reason = true, r
	}
	if s.text {
		s.b.WriteString(shown)
	}
	return s.text
}

// escape scans the escape whose backslash is at doc[j] and returns the index
// past it; more is false when the scan must stop (malformed, or a fault with
// no text to finish).
func (s *stringScan) escape(j int) (next int, more bool) {
	doc := s.doc
	if j+1 >= len(doc) {
		s.out.malformed = true
		return j, false
	}
	if doc[j+1] != 'u' {
		ch, ok := simpleEscape(doc[j+1])
		if !ok {
			s.out.malformed = true
			return j, false
		}
		if s.text {
			s.b.WriteByte(ch)
		}
		return j + 2, true
	}
	r, ok := hex4(doc, j+2)
	if !ok {
		s.out.malformed = true
		return j, false
	}
	switch {
	case r == 0:
		return j + 6, s.note(NUL, `\u0000`)
	case utf16.IsSurrogate(r):
		return s.surrogate(j, r)
	default:
		if s.text {
			s.b.WriteRune(r)
		}
		return j + 6, true
	}
}

// surrogate takes the \uXXXX escape at doc[j], whose value r is a surrogate,
// together with the low half that must follow a high one.
func (s *stringScan) surrogate(j int, r rune) (next int, more bool) {
	doc := s.doc
	if r < 0xDC00 && j+12 <= len(doc) && doc[j+6] == '\\' && doc[j+7] == 'u' {
		if r2, ok := hex4(doc, j+8); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
			if s.text {
				s.b.WriteRune(utf16.DecodeRune(r, r2))
			}
			return j + 12, true
		}
	}
	return j + 6, s.note(LoneSurrogate, `\u`+strconv.FormatUint(uint64(r), 16))
}

func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// hex4 reads the four hex digits at doc[i:i+4].
func hex4(doc []byte, i int) (rune, bool) {
	if i+4 > len(doc) {
		return 0, false
	}
	var r rune
	for _, c := range doc[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
