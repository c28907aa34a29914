package netlab

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// synAckWatch records the SYN-ACKs arriving at a Pod's eth0 from an address other than the
// one the client dialed: the reply that short-circuited on the node with the backend's (or
// the node's NodePort) address instead of the LB's, which the client's kernel answers with a
// RST (DOMAIN.md §1; TESTING.md §1 row 1). It uses an AF_PACKET socket because that works in
// a user namespace where tcpdump does not (TESTING.md §1). It reports addresses, never
// counts: how many retransmissions fit in a timeout is timing, not physics.
type synAckWatch struct {
	f      *os.File
	self   netip.Addr
	dialed netip.AddrPort

	mu    sync.Mutex
	stray []netip.AddrPort
	done  chan struct{}
}

func watchSynAcks(ns string, self netip.Addr, dialed netip.AddrPort) (*synAckWatch, error) {
	var fd int
	err := inNetns(ns, func() error {
		// Network byte order protocol, as packet(7) requires.
		proto := int(htons(unix.ETH_P_IP))
		s, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, proto)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			err = unix.Bind(s, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifi.Index})
		}
		if err != nil {
			unix.Close(s)
			return fmt.Errorf("bind AF_PACKET to eth0: %w", err)
		}
		fd = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	w := &synAckWatch{f: os.NewFile(uintptr(fd), "packet"), self: self, dialed: dialed, done: make(chan struct{})}
	go w.read()
	return w, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (w *synAckWatch) read() {
	defer close(w.done)
	buf := make([]byte, 2048)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		w.inspect(buf[:n])
	}
}

// inspect takes an IPv4 packet (SOCK_DGRAM strips the link header).
func (w *synAckWatch) inspect(p []byte) {
	if len(p) < 20 || p[0]>>4 != 4 || p[9] != unix.IPPROTO_TCP {
		return
	}
	ihl := int(p[0]&0x0f) * 4
	if len(p) < ihl+14 {
		return
	}
	src := netip.AddrFrom4([4]byte(p[12:16]))
	dst := netip.AddrFrom4([4]byte(p[16:20]))
	tcp := p[ihl:]
	const syn, ack = 0x02, 0x10
	if dst != w.self || tcp[13]&(syn|ack) != syn|ack {
		return
	}
	from := netip.AddrPortFrom(src, binary.BigEndian.Uint16(tcp[0:2]))
	if from == w.dialed {
		return
	}
	w.mu.Lock()
	if !slices.Contains(w.stray, from) {
		w.stray = append(w.stray, from)
	}
	w.mu.Unlock()
}

// stop closes the socket and returns what was seen.
func (w *synAckWatch) stop() []netip.AddrPort {
	w.f.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stray
}
