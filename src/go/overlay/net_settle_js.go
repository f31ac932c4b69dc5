//go:build js && wasm

// Added to package net by settle's build overlay (src/go/build.ts). Under settle's simulator a Go program's
// connections to the simulated API server are in-process connections of the host (src/go/host.ts), which turns
// every request, response and watch event into a simulator step. Any other address is refused by the host, which
// ends the run with a finding that names it. Outside settle (no `settle` object on the JavaScript global) nothing
// here is active and the js network behaves as Go ships it.
//
// A connection is a pair of the js network's in-memory sockets: the program holds one end, with Go's own
// deadlines and close semantics; the host reads what the program writes from the other end and writes what the
// server answers straight into the program's receive queue (sized so that a write never blocks the callback).

package net

import (
	"context"
	"sync"
	"syscall"
	"syscall/js"
)

// settleHost is the host's bridge object; undefined outside settle.
var settleHost = js.Global().Get("settle")

// settleConns holds the open connections by the host's id, for the host's inbox callback.
var (
	settleConnsMu sync.Mutex
	settleConns   = map[int]*settleConn{}
	settleInbox   js.Func
)

// settleReceiveBytesMax bounds the program's receive queue: never reached, so a delivery never blocks.
const settleReceiveBytesMax = 1 << 40

type settleConn struct {
	id     int
	client *netFD
	server *netFD
	from   sockaddr
	// never expires: the host's writes into the program's queue have no deadline.
	hostDeadline *deadlineTimer
}

func init() {
	if settleHost.Type() != js.TypeObject {
		return
	}
	testHookDialTCP = settleDialTCP
	testHookLookupIP = settleLookupIP
	settleInbox = js.FuncOf(settleReceive)
	settleHost.Call("register", settleInbox)
}

// settleLookupIP resolves only the names the host knows (the API server's); the host reports any other lookup.
func settleLookupIP(ctx context.Context, fn func(context.Context, string, string) ([]IPAddr, error), network, host string) ([]IPAddr, error) {
	answer := settleHost.Call("lookup", host)
	if answer.Type() != js.TypeString {
		return nil, &DNSError{Err: "no such host (in settle's simulator only the API server resolves)", Name: host, IsNotFound: true}
	}
	ip := ParseIP(answer.String())
	if ip == nil {
		return nil, &DNSError{Err: "settle: the host answered a malformed address", Name: host}
	}
	return []IPAddr{{IP: ip}}, nil
}

// settleDialTCP opens an in-process connection through the host; a refused address is ECONNREFUSED here and a
// finding of the run there.
func settleDialTCP(ctx context.Context, network string, laddr, raddr *TCPAddr) (*TCPConn, error) {
	answer := settleHost.Call("dial", raddr.IP.String(), raddr.Port)
	if answer.Type() != js.TypeNumber {
		return nil, &OpError{Op: "dial", Net: network, Addr: raddr, Err: syscall.ECONNREFUSED}
	}
	id := answer.Int()
	local := &TCPAddr{IP: IPv4(127, 0, 0, 1), Port: 40000 + id%20000}
	c := settlePair(id, local, raddr)
	settleConnsMu.Lock()
	settleConns[id] = c
	settleConnsMu.Unlock()
	go c.forward()
	return &TCPConn{conn{c.client}}, nil
}

func settlePair(id int, local, remote *TCPAddr) *settleConn {
	client := &netFD{family: syscall.AF_INET, sotype: syscall.SOCK_STREAM, net: "tcp", isConnected: true}
	server := &netFD{family: syscall.AF_INET, sotype: syscall.SOCK_STREAM, net: "tcp", isConnected: true}
	client.fakeNetFD = newFakeNetFD(client)
	server.fakeNetFD = newFakeNetFD(server)
	client.queue = newPacketQueue(settleReceiveBytesMax)
	server.queue = newPacketQueue(defaultBuffer)
	client.peer = server
	server.peer = client
	client.setAddr(local, remote)
	server.setAddr(remote, local)
	return &settleConn{id: id, client: client, server: server, from: remote, hostDeadline: newDeadlineTimer(noDeadline)}
}

// forward hands what the program writes to the host, until the program closes its end.
func (c *settleConn) forward() {
	buf := make([]byte, 32*1024)
	uint8Array := js.Global().Get("Uint8Array")
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			chunk := uint8Array.New(n)
			js.CopyBytesToJS(chunk, buf[:n])
			settleHost.Call("write", c.id, chunk)
		}
		if err != nil {
			settleConnsMu.Lock()
			delete(settleConns, c.id)
			settleConnsMu.Unlock()
			settleHost.Call("close", c.id)
			return
		}
	}
}

// settleReceive is the host's inbox: (id, bytes) delivers, (id, "eof") ends the stream, (id, "reset") resets it.
func settleReceive(this js.Value, args []js.Value) any {
	settleConnsMu.Lock()
	c := settleConns[args[0].Int()]
	settleConnsMu.Unlock()
	if c == nil {
		return nil
	}
	payload := args[1]
	if payload.Type() == js.TypeString {
		if payload.String() == "reset" {
			c.client.queue.setLinger(false)
		}
		c.client.queue.closeWrite()
		return nil
	}
	bytes := make([]byte, payload.Length())
	js.CopyBytesToGo(bytes, payload)
	c.client.queue.write(c.hostDeadline, bytes, c.from)
	return nil
}
