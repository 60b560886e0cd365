package pgtest

import (
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from a loopback port to a target address,
// and can cut them as a database outage would: Cut closes every open
// connection and the listener (new connections are refused), Restore
// listens again on the same port. Stall is the quieter outage of a network
// partition: connections stay open and new ones are accepted, but no byte
// moves until Resume.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	gate  chan struct{} // closed while bytes flow
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port) on 127.0.0.1, stopped when t
// ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	p := &Proxy{t: t, target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}, gate: make(chan struct{})}
	close(p.gate)
	p.serve(ln)
	t.Cleanup(func() {
		p.Resume()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// ProxyDSN starts a proxy to the host and port of dsn (a postgres:// URL)
// and returns it with dsn pointed at the proxy.
func ProxyDSN(t testing.TB, dsn string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("pgtest: proxy: need a postgres:// URL, not %q", dsn)
	}
	p := NewProxy(t, u.Host)
	u.Host = p.Addr()
	return p, u.String()
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Cut closes the listener and every forwarded connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Stall stops every byte in both directions, on open connections and on
// those accepted from now on, until Resume.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default: // already stalled
	}
}

// Resume lets bytes flow again after Stall.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// wait blocks while the proxy is stalled.
func (p *Proxy) wait() {
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	<-g
}

// Restore listens again on the proxy's port. The kernel may hold the port
// for a moment after Cut, so it retries for up to 5 s.
func (p *Proxy) Restore() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", p.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("pgtest: proxy: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Cut
			}
			p.forward(ln, c)
		}
	}()
}

// forward pipes c to a new connection to the target, unless the listener
// that accepted c was cut meanwhile.
func (p *Proxy) forward(ln net.Listener, c net.Conn) {
	p.wait()
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln != ln {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		defer p.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.wait()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	p.wg.Add(2)
	go pipe(up, c)
	go pipe(c, up)
}
