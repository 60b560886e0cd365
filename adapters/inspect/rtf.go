package inspect

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"unicode/utf16"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
)

// No maintained pure-Go RTF reader is served, and the text of RTF is
// simple to reach: groups, control words and the text between them. This
// parser keeps the text, skips the destinations a reader never sees, and
// decodes \'hh bytes through the document's code page and \uN escapes.

// rtfMaxDepth bounds group nesting, so a file of open braces costs no
// more than its size.
const rtfMaxDepth = 1024

// rtfSkip are destinations whose text is not the document's.
var rtfSkip = map[string]bool{
	"fonttbl": true, "colortbl": true, "stylesheet": true, "info": true, "pict": true, "object": true,
	"header": true, "headerl": true, "headerr": true, "headerf": true, "footer": true, "footerl": true,
	"footerr": true, "footerf": true, "themedata": true, "colorschememapping": true, "datastore": true,
	"latentstyles": true, "listtable": true, "listoverridetable": true, "rsidtbl": true, "generator": true,
	"xmlnstbl": true, "fldinst": true, "filetbl": true, "revtbl": true, "pgdsctbl": true, "listtext": true,
	"pntext": true, "pntxta": true, "pntxtb": true, "mmathPr": true, "userprops": true, "xe": true, "tc": true,
}

// rtfWords are control words that stand for text.
var rtfWords = map[string]string{
	"par": "\n", "line": "\n", "sect": "\n", "page": "\n", "row": "\n", "tab": "\t", "cell": "\t",
	"emdash": "\u2014", "endash": "\u2013", "bullet": "\u2022", "lquote": "\u2018", "rquote": "\u2019",
	"ldblquote": "\u201C", "rdblquote": "\u201D", "emspace": " ", "enspace": " ", "qmspace": " ",
}

// rtfState is what a group changes and its end restores.
type rtfState struct {
	skip bool
	uc   int // characters that stand in for each \u escape
}

type rtfParser struct {
	r       *bufio.Reader
	out     *textOut
	st      rtfState
	stack   []rtfState
	enc     encoding.Encoding
	pending []byte // code page bytes not yet decoded
	ucSkip  int    // stand-in characters still to skip
	high    rune   // a high surrogate waiting for its low half
}

// extractRTF writes the text of an RTF document.
func extractRTF(f io.ReaderAt, size int64, out *textOut) error {
	p := &rtfParser{r: bufio.NewReader(io.NewSectionReader(f, 0, size)), out: out, st: rtfState{uc: 1}, enc: charmap.Windows1252}
	err := p.run()
	if errors.Is(err, io.EOF) {
		err = nil // an unclosed document still has its text
	}
	if ferr := p.flush(); err == nil {
		err = ferr
	}
	return err
}

func (p *rtfParser) run() error {
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			return err
		}
		switch c {
		case '{':
			if len(p.stack) >= rtfMaxDepth {
				return errors.New("rtf groups nest too deep")
			}
			p.stack = append(p.stack, p.st)
			p.ucSkip = 0
		case '}':
			if len(p.stack) == 0 {
				return nil
			}
			if err := p.flush(); err != nil {
				return err
			}
			p.st, p.stack = p.stack[len(p.stack)-1], p.stack[:len(p.stack)-1]
			p.ucSkip = 0
			if len(p.stack) == 0 {
				return nil // the document's group is closed: what follows is not RTF
			}
		case '\\':
			if err := p.control(); err != nil {
				return err
			}
		case '\r', '\n':
		default:
			p.char(c)
		}
	}
}

// char takes one byte of text in the document's code page.
func (p *rtfParser) char(c byte) {
	if p.ucSkip > 0 {
		p.ucSkip--
		return
	}
	if !p.st.skip {
		p.pending = append(p.pending, c)
	}
}

// text writes s, after the code page bytes before it.
func (p *rtfParser) text(s string) error {
	if p.st.skip {
		return nil
	}
	if err := p.flush(); err != nil {
		return err
	}
	_, err := p.out.WriteString(s)
	return err
}

// flush decodes the pending code page bytes.
func (p *rtfParser) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	s, err := p.enc.NewDecoder().Bytes(p.pending)
	p.pending = p.pending[:0]
	if err != nil {
		return nil // undecodable bytes are dropped, not the document
	}
	_, err = p.out.Write(s)
	return err
}

// control reads what follows a backslash: a control symbol, a hex byte,
// or a control word with its optional numeric parameter.
func (p *rtfParser) control() error {
	c, err := p.r.ReadByte()
	if err != nil {
		return err
	}
	switch {
	case c == '\'':
		return p.hexByte()
	case c == '{' || c == '}' || c == '\\':
		p.char(c)
		return nil
	case c == '*':
		p.st.skip = true // an optional destination this reader does not know
		return nil
	case c == '~':
		return p.symbol("\u00A0")
	case c == '_':
		return p.symbol("-")
	case c == '\r' || c == '\n':
		return p.symbol("\n")
	case isLetter(c):
		if err := p.r.UnreadByte(); err != nil {
			return err
		}
		return p.word()
	}
	return p.symbol("") // other symbols (\- optional hyphen, \| ...) hold no text
}

// symbol writes a control symbol's text, which counts as one stand-in
// character of a \u escape.
func (p *rtfParser) symbol(s string) error {
	if p.ucSkip > 0 {
		p.ucSkip--
		return nil
	}
	return p.text(s)
}

// hexByte reads the two hex digits of \'hh.
func (p *rtfParser) hexByte() error {
	var h [2]byte
	if _, err := io.ReadFull(p.r, h[:]); err != nil {
		return err
	}
	v, err := strconv.ParseUint(string(h[:]), 16, 8)
	if err != nil {
		return nil // a malformed escape is skipped like an unknown word
	}
	p.char(byte(v))
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// word reads a control word and its parameter, and acts on it.
func (p *rtfParser) word() error {
	var name []byte
	for len(name) < 32 {
		c, err := p.r.ReadByte()
		if err != nil {
			return err
		}
		if !isLetter(c) {
			if err := p.r.UnreadByte(); err != nil {
				return err
			}
			break
		}
		name = append(name, c)
	}
	param, hasParam, err := p.param()
	if err != nil {
		return err
	}
	w := string(name)
	switch {
	case w == "bin" && hasParam:
		// Raw binary data: skipped unread, whatever bytes it holds.
		_, err := io.CopyN(io.Discard, p.r, max(int64(param), 0))
		return err
	case w == "u" && hasParam:
		return p.unicode(param)
	case w == "uc" && hasParam:
		p.st.uc = max(min(param, 16), 0)
		return nil
	case w == "ansicpg" && hasParam:
		p.enc = codePage(param, p.enc)
		return nil
	case rtfSkip[w]:
		p.st.skip = true
		return nil
	}
	if s, ok := rtfWords[w]; ok {
		return p.symbol(s)
	}
	if p.ucSkip > 0 {
		p.ucSkip--
	}
	return nil
}

// param reads a control word's optional signed numeric parameter and the
// space that may end the word.
func (p *rtfParser) param() (int, bool, error) {
	var digits []byte
	for len(digits) < 11 {
		c, err := p.r.ReadByte()
		if err != nil {
			return 0, false, err
		}
		if !(isDigit(c) || c == '-' && len(digits) == 0) {
			if c != ' ' {
				if err := p.r.UnreadByte(); err != nil {
					return 0, false, err
				}
			}
			break
		}
		digits = append(digits, c)
	}
	if len(digits) == 0 {
		return 0, false, nil
	}
	n, err := strconv.Atoi(string(digits))
	if err != nil {
		return 0, false, nil
	}
	return n, true, nil
}

// unicode writes a \uN character (N a signed 16-bit unit; surrogate
// halves come as two escapes) and arms the skip of its stand-ins.
func (p *rtfParser) unicode(n int) error {
	if n < 0 {
		n += 65536
	}
	r := rune(n)
	skip := p.st.uc
	var err error
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00:
		p.high = r
	case utf16.IsSurrogate(r):
		if p.high != 0 {
			err = p.text(string(utf16.DecodeRune(p.high, r)))
		}
		p.high = 0
	default:
		p.high = 0
		err = p.text(string(r))
	}
	p.ucSkip = skip
	return err
}

// codePage is the encoding of an \ansicpgN code page (cur when this
// reader does not know it).
func codePage(n int, cur encoding.Encoding) encoding.Encoding {
	names := map[int]string{
		932: "shift_jis", 936: "gbk", 949: "euc-kr", 950: "big5", 65001: "utf-8",
		874: "windows-874", 10000: "macintosh", 20866: "koi8-r", 28591: "iso-8859-1",
	}
	name, ok := names[n]
	if n >= 1250 && n <= 1258 {
		name, ok = "windows-"+strconv.Itoa(n), true
	}
	switch n {
	case 437:
		return charmap.CodePage437
	case 850:
		return charmap.CodePage850
	}
	if !ok {
		return cur
	}
	if e, err := htmlindex.Get(name); err == nil {
		return e
	}
	return cur
}
