package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"google.golang.org/api/googleapi"
)

type statusErr int

func (e statusErr) Error() string       { return fmt.Sprintf("status %d", int(e)) }
func (e statusErr) HTTPStatusCode() int { return int(e) }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "client timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestIsOutage(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"name not resolved", &net.DNSError{Err: "no such host", Name: "s3.example"}, true},
		{"a client's timeout", fmt.Errorf("get: %w", timeoutErr{}), true},
		{"a client's deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{"connection cut mid-body", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{"S3 500", fmt.Errorf("put: %w", statusErr(500)), true},
		{"S3 503 slow down", statusErr(503), true},
		{"throttled", statusErr(429), true},
		{"GCS 502", &googleapi.Error{Code: 502}, true},
		{"Azure 503", &azcore.ResponseError{StatusCode: 503}, true},
		{"S3 403", statusErr(403), false},
		{"S3 404", statusErr(404), false},
		{"GCS 400", &googleapi.Error{Code: 400}, false},
		{"a missing directory", &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, false},
		{"a full disk", &fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, false},
		{"permission denied", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, false},
		{"the caller left", fmt.Errorf("put: %w", context.Canceled), false},
		{"anything else", errors.New("boom"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := isOutage(tt.err); got != tt.want {
				t.Errorf("isOutage(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
