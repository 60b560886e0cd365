// Package relmap is the relational projection of a linked schema's
// published contract (issue 28): the tables a consumer's PostgreSQL holds
// for the entity type, the DDL that creates them, the structural diff a
// publish ships, and the idempotent SQL that applies one entity's state.
// It is pure: it renders SQL text and never talks to a database.
//
// # Tables
//
// One table per entity type, named after the root entity's name (then the
// document's title, then "entity"). Its columns are the entity's
// properties:
//
//   - A nested object with properties (1-1) is flattened into the parent's
//     columns, its path joined with "_" (hq.city -> hq_city), down to six
//     levels; deeper structure, an object without properties, a value of
//     several types and a multilingual value (a language map) are one jsonb
//     column. Flattening keeps a 1-1 value in the row that owns it: no join,
//     no second key, no orphan rows. A null object and an object of nulls
//     read alike, which the entity state keeps apart if it matters.
//   - An array of objects with properties is a child table named
//     <parent table>_<property path>, one row per item; an array of
//     scalars is a child table with a "value" column. Arrays inside items
//     give grandchild tables. Each child row carries its parent's key and
//     its 0-based position in the array (a null object item is skipped,
//     positions are kept). Arrays of arrays stay jsonb.
//   - A $ref to $defs is projected like the inline object it names (owned,
//     not shared); a $ref to $enums is a text column.
//
// # Keys (pk_strategy)
//
// The entity's key is its identifying properties (identifying or
// database_key) and its semantic_id property, outside arrays. A contract
// without one cannot be projected (ErrNoKey). A key property must be a
// scalar; a multilingual one gets a second text column <name>_key holding
// the value in the registration's key_language (required: ErrKeyLanguage).
//
//   - surrogate (default): every table has ee_id uuid PRIMARY KEY. The
//     entity's ee_id is a name-based UUID (version 8, SHA-256) of the entity
//     type and the key values (SurrogateID), so the same entity always lands
//     on the same row and at least one key value suffices. A child's ee_id
//     derives from its parent's ee_id, the array path and the position; the
//     child has ee_parent_id REFERENCES parent(ee_id) ON DELETE CASCADE and
//     UNIQUE (ee_parent_id, ee_ordinal).
//   - natural: the entity table's primary key is its key columns, all NOT
//     NULL, so an entity missing one is refused (ErrNoKeyValue; the
//     caller's on_gaps decides). Children repeat the parent's primary key
//     columns plus ee_ordinal_<depth>, as their foreign key (ON DELETE
//     CASCADE) and primary key prefix. A natural key is a btree entry:
//     values above about 2.7 kB are refused by the consumer's database,
//     which surrogate avoids.
//
// The entity table also has ee_revision bigint NOT NULL. The entity layer
// may key its rows itself: UpsertWithID (and a Key holding ee_id) use its
// UUID as ee_id instead, so an entity whose key values change, or two
// records merged into one entity, keep one row.
//
// # Names
//
// Names are lower snake case of [a-z0-9_] (Ident: camelCase split, other
// characters to "_", a leading digit prefixed with "c_"; a conversion that
// lost characters appends a hash of the original). A name longer than 63
// bytes (PostgreSQL's limit, beyond which it truncates silently) keeps its
// first 54 bytes and a "_" and an 8-hex SHA-256 of the full name (Fit).
// Names are unique per namespace: tables, indexes and constraints share
// the relation namespace, columns one per table. On a collision the later
// source gets "_<hash of its source path>"; system columns (ee_*) and
// parent key columns are claimed first. Every identifier is double-quoted
// in SQL, so reserved words ("order", "user") are ordinary names. A map
// projected with Options.Previous keeps every name the previous map gave
// the same source, so a publish never renames a shipped column; names in
// Options.Taken (Map.Relations of the other schemas linked to the same
// database) are avoided, so two schemas never share a table.
//
// # Column types
//
// db_type first (text, varchar(n), char(n), uuid, date, timestamp ->
// timestamptz, time, smallint, integer, bigint, numeric, double -> double
// precision), then a string's format (date -> date, date-time ->
// timestamptz, uuid -> uuid; email, uri, time and the rest stay text),
// then type (string -> text, integer -> bigint, number -> numeric, which
// keeps a JSON number's digits exactly, boolean -> boolean), else jsonb.
// With propagate_not_null, a property required by its object (and every
// flattened ancestor), not nullable and not typed null is NOT NULL.
//
// # Indexes (index_scalars)
//
// none: the primary and unique keys only. keys: also every key column
// outside the primary key (item keys of child tables included). filterable
// (default): also columns with an index intent, enums, and boolean,
// number, date, time and uuid columns. all: every column but jsonb. Text
// columns get hash indexes (equality, no entry size limit); others btree.
//
// # Diff
//
// Diff(old, new) compares tables and columns by name. Additive changes
// carry the DDL a schema delta ships: add_table (CREATE TABLE IF NOT
// EXISTS and its indexes), add_column (always nullable: ALTER TABLE ADD
// COLUMN IF NOT EXISTS), add_index, drop_index, drop_not_null. Transforms
// need confirm_transforms (Check returns schema.ErrConfirmTransforms):
// column_type (with an ALTER ... TYPE ... USING cast), drop_column,
// drop_table, set_not_null, key_change (the primary key, or under
// surrogate the set of key columns that ee_id derives from) and
// pk_strategy (no SQL for the last two: the consumer reloads from a
// snapshot).
//
// # Writes
//
// Upsert renders, in order, for one transaction:
//
//  1. INSERT the entity row ... ON CONFLICT (primary key) DO UPDATE SET
//     every column WHERE target.ee_revision < EXCLUDED.ee_revision;
//  2. per depth-1 child table, DELETE the entity's rows (deeper tables go
//     by cascade), and
//  3. per child table, INSERT ... SELECT FROM (VALUES ...) of the current
//     items,
//
// steps 2 and 3 guarded by EXISTS (the entity row at exactly this
// revision). So a replayed revision rewrites the same rows, an older one
// changes nothing, and an array that shrank loses its extra rows. Delete
// removes the entity row WHERE ee_revision <= the delete's revision, and
// its children by cascade. Both return the structured Payload too.
//
// # Literals
//
// Every value is a literal with an explicit cast ('x'::text,
// NULL::bigint, '{"a":1}'::jsonb). A string without a backslash is
// '...' with single quotes doubled; with a backslash it is E'...' with
// backslashes and quotes doubled. Both read the same whether the
// consumer's standard_conforming_strings is on or off, so no session
// setting can turn data into SQL. NUL (which text and jsonb cannot hold)
// and invalid UTF-8 are refused, anywhere in a jsonb value too. Numbers
// must match the JSON number grammar (at most 400 characters, exponent
// within ±1000, checked before any arithmetic), fit bigint, integer or
// smallint as whole numbers, and be finite for double precision; they are
// then quoted too. date, timestamptz, time and uuid values are checked
// (YYYY-MM-DD from year 1, RFC 3339, HH:MM[:SS[.ffffff]] with an optional
// zone, hyphenated UUID), and a value longer than a varchar(n) or char(n)
// is refused rather than truncated by the cast. A bad value is an error
// naming its property (ErrValue) here rather than a refused batch at the
// consumer. Key strings are trimmed; a blank one is no key value.
package relmap
