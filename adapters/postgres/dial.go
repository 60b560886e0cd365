package postgres

import (
	"net"
	"time"
)

// Dead connections. A database that stops answering without closing the
// connection (a network partition, a host that died) would otherwise hold a
// query, and the request waiting on it, until the kernel gives up
// retransmitting (about 15 minutes on Linux). Keepalive probes find an idle
// connection's peer gone; the TCP user timeout (Linux) closes a connection
// whose sent data stays unacknowledged. A slow query is not affected: the
// server's kernel acknowledges the query while the server works on it.
const (
	keepAliveIdle     = 10 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
	userTimeout       = 30 * time.Second
)

// dialer opens the pool's connections with those settings.
func dialer() *net.Dialer {
	return &net.Dialer{
		Timeout: 10 * time.Second,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount,
		},
		Control: setUserTimeout,
	}
}
