package postgres_test

import (
	"syscall"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/test/pgtest"
)

// TestConnectionsDetectDeadPeers: the pool's TCP connections carry the user
// timeout and keepalive that end a query to a database that stopped
// answering, instead of the kernel's quarter of an hour.
func TestConnectionsDetectDeadPeers(t *testing.T) {
	is := is.New(t)
	db, err := postgres.Open(t.Context(), pgtest.Native(t), postgres.PoolConfig{})
	is.NoErr(err)
	defer db.Close()
	c, err := db.Pool.Acquire(t.Context())
	is.NoErr(err)
	defer c.Release()
	raw, ok := c.Conn().PgConn().Conn().(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		t.Skip("not a TCP connection")
	}
	sc, err := raw.SyscallConn()
	is.NoErr(err)
	var user, keep, idle int
	var gerr error
	is.NoErr(sc.Control(func(fd uintptr) {
		if user, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); gerr != nil {
			return
		}
		if keep, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE); gerr != nil {
			return
		}
		idle, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
	}))
	is.NoErr(gerr)
	is.Equal(user, 30000) // ms
	is.Equal(keep, 1)
	is.Equal(idle, 10) // s
}
