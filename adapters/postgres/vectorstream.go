package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/entityenrich/enrich/domain/concept"
)

// nearestStreamSQL reads a slice's vectors of one length in one statement,
// in no order (the selection needs none), as vector_bytes: the float4
// values back to back, which the server sends as they are stored (the
// migration 20261129090000_concept_vector_bytes). Its parameters:
// organization, type, model, length.
const nearestStreamSQL = `SELECT e.concept_id, c.ref_count, c.canonical_text, e.vector_bytes
	FROM concept_embeddings e JOIN semantic_concepts c ON c.id = e.concept_id
	WHERE e.org_id = $1 AND e.concept_type = $2 AND e.embedding_model = $3 AND e.dims = $4`

// nearestStreamed ranks the slice's vectors as pgx reads them off the
// wire: each is decoded from its bytes into one reused buffer, and a neighbour (its id and text as strings) is built only when
// the selection admits it, so a lookup allocates next to nothing whatever
// the slice's size. It holds one of the pool's connections for the read.
func nearestStreamed(ctx context.Context, c *pgx.Conn, orgID string, s concept.Slice, q []float32, top *concept.TopK) error {
	rows, err := c.Query(ctx, nearestStreamSQL, orgID, s.Type, s.EmbeddingModel, len(q))
	if err != nil {
		return err
	}
	defer rows.Close()
	qn := concept.SquaredNorm(q)
	d := vectorDecoder{types: c.TypeMap()}
	for rows.Next() {
		fds, raw := rows.FieldDescriptions(), rows.RawValues()
		if len(fds) != 4 || len(raw) != 4 {
			return errors.New("postgres: nearest: unexpected columns")
		}
		v, err := d.vector(fds[3], raw[3])
		if err != nil {
			return err
		}
		if len(v) != len(q) {
			continue
		}
		sim := concept.CosineNormed(q, v, qn, concept.SquaredNorm(v))
		if floor, full := top.Floor(); full && sim < floor {
			continue // the usual case: no string is made
		}
		refs, err := d.int8(fds[1], raw[1])
		if err != nil {
			return err
		}
		if id := string(raw[0]); top.Admits(sim, int(refs), id) {
			text := string(raw[2])
			top.Push(concept.Neighbor{ConceptID: id, Text: text, CanonicalText: text, IsCanonical: true, RefCount: int(refs), Similarity: sim})
		}
	}
	return rows.Err()
}

// vectorDecoder decodes a row's raw values. Binary values (what pgx asks
// for with the extended protocol) are read in place; text ones (the simple
// protocol, PGlite's) go through pgx's type map.
type vectorDecoder struct {
	types *pgtype.Map
	buf   []float32
	bytes []byte
}

var errVectorBytes = errors.New("postgres: nearest: vector_bytes is not a whole number of float4 values")

// vector is a vector_bytes value (big-endian float4 values), in a buffer
// the next call reuses.
func (d *vectorDecoder) vector(fd pgconn.FieldDescription, raw []byte) ([]float32, error) {
	if fd.Format != pgtype.BinaryFormatCode {
		d.bytes = d.bytes[:0]
		if err := d.types.Scan(fd.DataTypeOID, fd.Format, raw, &d.bytes); err != nil {
			return nil, err
		}
		raw = d.bytes
	}
	if len(raw)%4 != 0 {
		return nil, errVectorBytes
	}
	d.buf = putVectorBytes(slices.Grow(d.buf[:0], len(raw)/4)[:len(raw)/4], raw)
	return d.buf, nil
}

// vectorOfBytes is a vector_bytes value as a new vector.
func vectorOfBytes(raw []byte) ([]float32, error) {
	if len(raw)%4 != 0 {
		return nil, errVectorBytes
	}
	return putVectorBytes(make([]float32, len(raw)/4), raw), nil
}

// putVectorBytes decodes raw's big-endian float4 values into v, which
// holds exactly as many.
func putVectorBytes(v []float32, raw []byte) []float32 {
	for i := range v {
		v[i] = math.Float32frombits(binary.BigEndian.Uint32(raw[4*i:]))
	}
	return v
}

// int8 is a bigint value.
func (d *vectorDecoder) int8(fd pgconn.FieldDescription, raw []byte) (int64, error) {
	if fd.Format == pgtype.BinaryFormatCode && fd.DataTypeOID == pgtype.Int8OID && len(raw) == 8 {
		return int64(binary.BigEndian.Uint64(raw)), nil
	}
	var n int64
	err := d.types.Scan(fd.DataTypeOID, fd.Format, raw, &n)
	return n, err
}
