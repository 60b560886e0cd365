// Package dbsync holds database registrations (a consumer's PostgreSQL bound
// to one or more linked schemas), their links, and the entity layer's state:
// the types every database-sync part agrees on, and their pure rules.
// Stores persist them; the feed's lease rules live in domain/delta and the
// relational projection in domain/relmap.
package dbsync
