package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/entityenrich/enrich/ports"
)

// unavailable returns an error wrapping ports.ErrUnavailable, naming what
// failed, when err says that the database cannot be reached right now; nil
// when it says something else. The caller should try again later (the API
// answers 503 with Retry-After): the same request can succeed once the
// database is back, unlike a constraint violation or a bug.
//
// The cause is kept as text only, not in the chain, so that a dial that ran
// out of time is not mistaken by callers for their own context's deadline.
func unavailable(err error, what string) error {
	if !isUnavailable(err) {
		return nil
	}
	return fmt.Errorf("postgres: %s: %w: %v", what, ports.ErrUnavailable, err)
}

// isUnavailable classifies err as a connection-level failure:
//   - the connection could not be made (pgconn.ConnectError: refused, reset,
//     timed out while dialing or during the startup handshake), except when
//     the server answered that the credentials or the database are wrong,
//     which is configuration, not an outage;
//   - the server said so: SQLSTATE class 08 (connection exception), 53
//     (insufficient resources, e.g. too many connections), 57P01-57P03
//     (admin or crash shutdown, cannot connect now);
//   - the connection died under a query: a network error, EOF or an
//     unexpected EOF, a reset or broken pipe, a connection the driver had
//     already closed, driver.ErrBadConn.
//
// The caller's own cancellation is never an outage: the caller left; nor is
// a deadline that struck after the connection was made.
func isUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return unavailableState(pg.Code)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// A deadline past the dial is the caller's or a statement's; it
		// also satisfies net.Error, so it is decided here.
		return false
	}
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &oe), errors.As(err, &ne):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, driver.ErrBadConn):
		return true
	}
	return false
}

// unavailableState reports whether a SQLSTATE means that the server cannot
// serve now, as opposed to refusing this statement.
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
		return true
	}
	switch code {
	case "57P01", "57P02", "57P03":
		return true
	}
	return false
}

// txErr is for the error of RunInTx, whose function wraps its own errors: a
// connection-level failure (BEGIN or COMMIT could not reach the server)
// becomes ErrUnavailable, anything else is returned as it is.
func txErr(err error, what string) error {
	if u := unavailable(err, what); u != nil {
		return u
	}
	return err
}
