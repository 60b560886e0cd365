// Package delta holds the rules of a registration's delta feed: the FIFO
// window, the lease, the ack up to an id, purging and quarantine. It is pure:
// stores load deltas and the feed State and persist what the rules return,
// and the time is passed in.
//
// A window never splits a batch. The rows of one batch_id are one
// enrichment's change to an entity and its children; the consumer applies a
// window in one transaction, so half a batch would leave the entity half
// written. When the first batch alone is larger than the limit, the window
// is that whole batch.
//
// A claim leases the next window after the acknowledged watermark. While
// the lease is live another claim gets nothing new; when it expires the same
// window is delivered again, first and in the same order. Delivery is at
// least once and FIFO: the consumer keeps its own watermark in its database,
// in the transaction that applies the window, so a redelivered window it
// already applied is skipped. Redelivering from the watermark, never from a
// client's cursor, is what makes a lost ack cost a redelivery and never a
// lost delta.
//
// An ack up to an id moves the watermark. It may not pass what was
// delivered (ErrAckBeyondDelivered, 409); a repeat is harmless. A batch the
// consumer's database refused is quarantined whole and the feed moves on;
// it comes back only at the tail of the feed (reinject, redrive).
package delta
