// Package delta holds the rules of a registration's delta feed: the FIFO
// window, the lease, the ack up to an id, purging and quarantine. It is pure:
// stores load deltas and the feed State, persist what the rules return, and
// pass the time in.
//
// A window never splits a batch. The rows of one batch_id are one
// enrichment's change to an entity and its children; the consumer applies a
// window in one transaction, so half a batch would leave the entity half
// written. When the first batch alone is larger than the limit, the window
// is that whole batch.
//
// A claim (claim=true) leases the next window after the acknowledged
// watermark. While the lease is live another claim gets nothing new and is
// told when the lease ends; when it expires the same window is delivered
// again, first and in the same order. Delivery is FIFO and at least once:
// the consumer keeps its own watermark in its database, in the transaction
// that applies the window, so a window it already applied is skipped when
// it comes again. Claims start from the server's watermark, never from the
// client's cursor, so a lost ack costs a redelivery and never a delta. A
// read (claim=false) changes nothing and can be replayed at will.
//
// An ack up to an id moves the watermark. It may not pass what was
// delivered (ErrAckBeyondDelivered, 409); a repeat is harmless. With
// purge_on_ack the acknowledged deltas are deleted; with purge_entity_state
// entity rows go once every registration acknowledged their latest revision
// (EntityPurgeable).
//
// A batch the consumer's database refused is quarantined whole and the feed
// moves on past it. It comes back only at the tail of the feed (reinject,
// redrive) or is deleted; see Release.
package delta
