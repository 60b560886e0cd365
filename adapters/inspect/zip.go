package inspect

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/entityenrich/enrich/domain/attachment"
)

// ratioFloor is the uncompressed size below which an entry's compression
// ratio is not judged: small, repetitive XML parts compress far better
// than any bound worth setting, and cannot expand far.
const ratioFloor = 1 << 20

// The zip records read before archive/zip is trusted with the file.
const (
	sigEnd      = 0x06054b50 // end of central directory
	sigEnd64    = 0x06064b50 // zip64 end of central directory
	sigLoc64    = 0x07064b50 // zip64 end locator
	sigCentral  = 0x02014b50 // central directory header
	lenEnd      = 22
	lenEnd64    = 56
	lenLoc64    = 20
	lenCentral  = 46
	maxEndSpan  = 65 * 1024 // archive/zip's own search span for the end record
	zip64Extra  = 0x0001
	sizeUnknown = 0xFFFFFFFF
)

// zipEntry is what the central directory says of one entry.
type zipEntry struct {
	name              string
	method            uint16
	compressed, size  uint64
	localHeaderOffset uint64
}

// dirEnd is where the central directory lies, as archive/zip finds it.
type dirEnd struct {
	records, dirSize, dirOffset uint64
	endOffset                   int64
}

// readDirEnd finds the end of central directory record (and its zip64
// form) the way archive/zip does, so the scan below reads the very
// directory archive/zip would.
func readDirEnd(f io.ReaderAt, size int64) (dirEnd, error) {
	span := min(size, maxEndSpan)
	buf := make([]byte, span)
	if _, err := f.ReadAt(buf, size-span); err != nil && err != io.EOF {
		return dirEnd{}, err
	}
	p := -1
	for i := len(buf) - lenEnd; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == sigEnd {
			p = i
			break
		}
	}
	if p < 0 {
		return dirEnd{}, errors.New("no end of central directory")
	}
	b := buf[p:]
	d := dirEnd{
		records:   uint64(binary.LittleEndian.Uint16(b[10:])),
		dirSize:   uint64(binary.LittleEndian.Uint32(b[12:])),
		dirOffset: uint64(binary.LittleEndian.Uint32(b[16:])),
		endOffset: size - span + int64(p),
	}
	if d.records == 0xFFFF || d.dirSize == 0xFFFF || d.dirOffset == sizeUnknown {
		if err := readDirEnd64(f, &d); err != nil {
			return dirEnd{}, err
		}
	}
	if d.dirSize > uint64(size) || d.dirOffset > uint64(size) {
		return dirEnd{}, errors.New("central directory outside the file")
	}
	return d, nil
}

// readDirEnd64 reads the zip64 end record through its locator, when the
// locator is there.
func readDirEnd64(f io.ReaderAt, d *dirEnd) error {
	loc := make([]byte, lenLoc64)
	if d.endOffset < lenLoc64 {
		return nil
	}
	if _, err := f.ReadAt(loc, d.endOffset-lenLoc64); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(loc) != sigLoc64 {
		return nil
	}
	off := int64(binary.LittleEndian.Uint64(loc[8:]))
	end := make([]byte, lenEnd64)
	if off < 0 {
		return errors.New("bad zip64 end offset")
	}
	if _, err := f.ReadAt(end, off); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(end) != sigEnd64 {
		return errors.New("bad zip64 end record")
	}
	d.records = binary.LittleEndian.Uint64(end[32:])
	d.dirSize = binary.LittleEndian.Uint64(end[40:])
	d.dirOffset = binary.LittleEndian.Uint64(end[48:])
	d.endOffset = off
	return nil
}

// scanDir lists the central directory's entries, reading at most max+1 of
// them, so a directory of millions of tiny entries costs nothing to
// refuse. It returns the entries read and whether there were more than
// max. The start follows archive/zip's rule for files with a prefix.
func scanDir(f io.ReaderAt, size int64, max int) ([]zipEntry, bool, error) {
	d, err := readDirEnd(f, size)
	if err != nil {
		return nil, false, err
	}
	base := d.endOffset - int64(d.dirSize) - int64(d.dirOffset)
	if base < 0 || isCentral(f, int64(d.dirOffset)) {
		base = 0
	}
	start := base + int64(d.dirOffset)
	if start < 0 || start >= size {
		return nil, false, errors.New("central directory outside the file")
	}
	br := bufio.NewReader(io.NewSectionReader(f, start, size-start))
	var out []zipEntry
	for {
		e, err := readCentral(br)
		if err != nil {
			return out, false, nil // archive/zip stops where the headers stop, too
		}
		if len(out) == max {
			return out, true, nil
		}
		out = append(out, e)
	}
}

// isCentral says whether a central directory header starts at off.
func isCentral(f io.ReaderAt, off int64) bool {
	var b [4]byte
	_, err := f.ReadAt(b[:], off)
	return err == nil && binary.LittleEndian.Uint32(b[:]) == sigCentral
}

// readCentral reads one central directory header, its zip64 sizes
// included.
func readCentral(r io.Reader) (zipEntry, error) {
	var h [lenCentral]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return zipEntry{}, err
	}
	if binary.LittleEndian.Uint32(h[:]) != sigCentral {
		return zipEntry{}, errors.New("not a central directory header")
	}
	le := binary.LittleEndian
	e := zipEntry{
		method:            le.Uint16(h[10:]),
		compressed:        uint64(le.Uint32(h[20:])),
		size:              uint64(le.Uint32(h[24:])),
		localHeaderOffset: uint64(le.Uint32(h[42:])),
	}
	rest := make([]byte, int(le.Uint16(h[28:]))+int(le.Uint16(h[30:]))+int(le.Uint16(h[32:])))
	if _, err := io.ReadFull(r, rest); err != nil {
		return zipEntry{}, err
	}
	nameLen, extraLen := int(le.Uint16(h[28:])), int(le.Uint16(h[30:]))
	e.name = string(rest[:nameLen])
	readZip64Extra(rest[nameLen:nameLen+extraLen], &e)
	return e, nil
}

// readZip64Extra takes the 64-bit sizes from a zip64 extra field: each is
// there only when its 32-bit field is saturated, in a fixed order.
func readZip64Extra(extra []byte, e *zipEntry) {
	le := binary.LittleEndian
	for len(extra) >= 4 {
		id, n := le.Uint16(extra), int(le.Uint16(extra[2:]))
		extra = extra[4:]
		if n > len(extra) {
			return
		}
		field := extra[:n]
		extra = extra[n:]
		if id != zip64Extra {
			continue
		}
		for _, p := range []*uint64{&e.size, &e.compressed, &e.localHeaderOffset} {
			if *p == sizeUnknown && len(field) >= 8 {
				*p, field = le.Uint64(field), field[8:]
			}
		}
	}
}

// checkBomb refuses a directory past the bounds: too many entries, too
// large a declared total, or an entry that inflates too far.
func (in Inspector) checkBomb(entries []zipEntry, over bool) error {
	if over {
		return fmt.Errorf("%w: more than %d entries", attachment.ErrBomb, in.MaxEntries)
	}
	var total uint64
	for _, e := range entries {
		total += e.size
		if total > uint64(in.MaxUnzipped) || total < e.size {
			return fmt.Errorf("%w: more than %d bytes uncompressed", attachment.ErrBomb, in.MaxUnzipped)
		}
		if e.size > ratioFloor && e.size/max(e.compressed, 1) > uint64(in.MaxRatio) {
			return fmt.Errorf("%w: %s inflates more than %d times", attachment.ErrBomb, e.name, in.MaxRatio)
		}
	}
	return nil
}

// zipDoc is a zip-based document that passed the bomb checks.
type zipDoc struct {
	r      *zip.Reader
	byName map[string]*zip.File
}

// openZip checks a zip-based document's directory against the bounds,
// then opens it.
func (in Inspector) openZip(f io.ReaderAt, size int64) (*zipDoc, error) {
	entries, over, err := scanDir(f, size, in.MaxEntries)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", attachment.ErrUnreadable, err)
	}
	if err := in.checkBomb(entries, over); err != nil {
		return nil, err
	}
	r, err := zip.NewReader(f, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", attachment.ErrUnreadable, err)
	}
	if len(r.File) > in.MaxEntries {
		return nil, fmt.Errorf("%w: more than %d entries", attachment.ErrBomb, in.MaxEntries)
	}
	z := &zipDoc{r: r, byName: make(map[string]*zip.File, len(r.File))}
	for _, f := range r.File {
		if _, dup := z.byName[f.Name]; !dup {
			z.byName[f.Name] = f // the first of duplicate names, as a linear search would
		}
	}
	return z, nil
}

// file finds an entry by name (nil when there is none). Names are matched
// without a leading slash and case-sensitively, as the formats require.
func (z *zipDoc) file(name string) *zip.File {
	return z.byName[strings.TrimPrefix(path.Clean("/"+name), "/")]
}

// open reads an entry through a bound: a header that lies about its size
// cannot make the entry inflate past what it declared.
func (z *zipDoc) open(name string) (io.ReadCloser, error) {
	f := z.file(name)
	if f == nil {
		return nil, fmt.Errorf("%w: %s is missing", attachment.ErrUnreadable, name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	return &boundedEntry{rc: rc, lr: io.LimitReader(rc, int64(f.UncompressedSize64)+1), left: f.UncompressedSize64}, nil
}

// boundedEntry reads an entry up to its declared size and fails with
// ErrBomb past it.
type boundedEntry struct {
	rc   io.ReadCloser
	lr   io.Reader
	left uint64
}

func (b *boundedEntry) Read(p []byte) (int, error) {
	n, err := b.lr.Read(p)
	// archive/zip itself answers ErrFormat when an entry inflates past the
	// size its header declared.
	if uint64(n) > b.left || errors.Is(err, zip.ErrFormat) {
		return 0, fmt.Errorf("%w: an entry inflates past its declared size", attachment.ErrBomb)
	}
	b.left -= uint64(n)
	return n, err
}

func (b *boundedEntry) Close() error { return b.rc.Close() }
