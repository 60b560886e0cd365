// Package webhook holds the rules of the service's outgoing notifications:
// the signature of a delivery (X-EE-Signature) and its check, the retry
// schedule of a delivery that failed, and the debounce of a link's
// delta-available notifications. It is pure: stores keep the outbox and
// the notification state, and an adapter sends the requests.
package webhook
