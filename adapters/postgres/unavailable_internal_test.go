package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

func TestIsUnavailable(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Severity: "FATAL", Code: code}) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"no rows", sql.ErrNoRows, false},
		{"plain", errors.New("boom"), false},
		{"unique violation", pg("23505"), false},
		{"NUL in text", pg("22P05"), false},
		{"serialization failure", pg("40001"), false},
		{"statement timeout", pg("57014"), false},
		{"bad password", pg("28P01"), false},
		{"no such database", pg("3D000"), false},
		{"connection failure", pg("08006"), true},
		{"cannot establish", pg("08001"), true},
		{"admin shutdown", pg("57P01"), true},
		{"crash shutdown", pg("57P02"), true},
		{"cannot connect now", pg("57P03"), true},
		{"too many connections", pg("53300"), true},
		{"dial refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"read reset", fmt.Errorf("query: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"bare reset", syscall.ECONNRESET, true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), true},
		{"EOF", fmt.Errorf("receive message: %w", io.EOF), true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"conn closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		{"bad conn", driver.ErrBadConn, true},
		{"caller cancelled", context.Canceled, false},
		{"caller cancelled during a read", fmt.Errorf("%w: %w", context.Canceled, &net.OpError{Op: "read", Err: syscall.ECONNRESET}), false},
		{"caller's deadline after the dial", fmt.Errorf("query: %w", context.DeadlineExceeded), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(isUnavailable(tt.err), tt.want)
			u := unavailable(tt.err, "get thing x")
			is.Equal(u != nil, tt.want)
			if tt.want {
				is.True(errors.Is(u, ports.ErrUnavailable))
				is.True(!errors.Is(u, context.DeadlineExceeded))
			}
			// The helpers agree with the classifier whatever else they do.
			if tt.err != nil {
				is.Equal(errors.Is(notFound(tt.err, "get thing x"), ports.ErrUnavailable), tt.want)
				is.Equal(errors.Is(conflict(tt.err, "create thing x"), ports.ErrUnavailable), tt.want)
				is.Equal(errors.Is(fail(tt.err, "list things"), ports.ErrUnavailable), tt.want)
				is.Equal(errors.Is(txErr(tt.err, "update thing x"), ports.ErrUnavailable), tt.want)
				if !tt.want {
					is.Equal(txErr(tt.err, "update thing x"), tt.err) // fn's own errors pass as they are
					is.True(errors.Is(fail(tt.err, "list things"), tt.err))
				}
			}
		})
	}
}
