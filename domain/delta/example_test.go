package delta_test

import (
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/delta"
)

// A consumer claims a window, crashes before acknowledging it, and gets the
// same window again once the lease expires; its ack then releases the lease.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := feed(1, "a:2 b:3 c:1") // batches a (ids 1-2), b (3-5), c (6)
	var s delta.State

	res, s, _ := delta.Claim(s, now, 2*time.Minute, rows, 3)
	fmt.Println("claim:", ids(res.Deltas), "more:", res.HasMore)

	res, s, _ = delta.Claim(s, now.Add(time.Minute), 2*time.Minute, rows, 3)
	fmt.Println("while leased:", ids(res.Deltas), "busy until", res.LeaseExpiresAt.Format("15:04"))

	res, s, _ = delta.Claim(s, now.Add(3*time.Minute), 2*time.Minute, rows, 3)
	fmt.Println("after expiry:", ids(res.Deltas), "redelivery:", res.Redelivery)

	_, _, err := delta.Ack(s, 6, now.Add(4*time.Minute), delta.Settings{})
	fmt.Println("ack 6:", err)

	ack, s, _ := delta.Ack(s, 2, now.Add(4*time.Minute), delta.Settings{PurgeOnAck: true})
	fmt.Println("ack 2: acked", ack.Acked, "purge:", ack.PurgeDeltas, "released:", ack.LeaseReleased)

	res, _, _ = delta.Claim(s, now.Add(5*time.Minute), 2*time.Minute, rows, 1)
	fmt.Println("next, limit 1:", ids(res.Deltas))
	// Output:
	// claim: [1 2] more: true
	// while leased: [] busy until 00:02
	// after expiry: [1 2] redelivery: true
	// ack 6: ack beyond the delivered deltas: up_to_id 6, delivered up to 2
	// ack 2: acked {0 2} purge: true released: true
	// next, limit 1: [3 4 5]
}
