package blobstore

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"
)

// isOutage reports whether err says that the storage cannot serve now, so
// that the same request may succeed later (the API answers 503):
//   - the service could not be reached or the connection died: a network
//     error (refused, reset, timed out, no route, a name that did not
//     resolve), an unexpected EOF;
//   - a client's own timeout struck (the caller's context is checked
//     before this is called);
//   - the service answered 5xx, or 429 (throttled);
//   - the driver said so (gcerrors.ResourceExhausted).
//
// A missing bucket, a permission denied, a bad key or a full disk are not
// outages: they need an operator, not a retry.
func isOutage(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if status := httpStatus(err); status != 0 {
		return status >= 500 || status == http.StatusTooManyRequests
	}
	if gcerrors.Code(err) == gcerrors.ResourceExhausted || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// Not any net.Error: a file's syscall.Errno satisfies that interface
	// too, and a missing directory is no outage.
	var oe *net.OpError
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &oe), errors.As(err, &dns), errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true
	}
	return false
}

// httpStatus is the HTTP status the service answered, as each cloud's SDK
// reports it (0 when err carries none).
func httpStatus(err error) int {
	var aws interface{ HTTPStatusCode() int } // smithy-go's and the AWS SDK's response errors
	var gcs *googleapi.Error
	var az *azcore.ResponseError
	switch {
	case errors.As(err, &aws):
		return aws.HTTPStatusCode()
	case errors.As(err, &gcs):
		return gcs.Code
	case errors.As(err, &az):
		return az.StatusCode
	}
	return 0
}
