package netlab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// synAckWatch watches a client Pod's eth0 during one dial, with an AF_PACKET socket because
// that works in a user namespace where tcpdump does not (docs/sources.md#kernel-lab). The kernel buffers
// what it captures; drain reads it afterwards, so what it reports depends on the packets,
// not on how promptly a goroutine was scheduled.
type synAckWatch struct {
	f      *os.File
	self   netip.Addr
	dialed netip.AddrPort
}

// packetEvidence is what the client's eth0 saw during one dial.
type packetEvidence struct {
	// answered: a SYN-ACK came from the dialed address, so the client's kernel completed the
	// handshake whatever the Go client observed.
	answered bool
	// stray: SYN-ACKs from any other address, the reply that short-circuited on the node with
	// the backend's (or a NodePort's) address instead of the LB's; the client's kernel answers
	// them with a RST (docs/sources.md#loopback; docs/sources.md#kernel-lab row 1). Addresses, never counts.
	stray []netip.AddrPort
	// syns the client sent: a diagnostic for a lost first SYN, never asserted.
	syns int
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
	return &synAckWatch{f: os.NewFile(uintptr(fd), "packet"), self: self, dialed: dialed}, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// drain reads every captured packet without blocking, closes the socket and returns the
// evidence. One dial's handful of packets fits the socket's receive buffer many times over.
func (w *synAckWatch) drain() (packetEvidence, error) {
	defer w.f.Close()
	var ev packetEvidence
	rc, err := w.f.SyscallConn()
	if err != nil {
		return ev, err
	}
	buf := make([]byte, 2048)
	var readErr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case errors.Is(err, unix.EAGAIN):
				return true
			case err != nil:
				readErr = err
				return true
			}
			w.inspect(buf[:n], &ev)
		}
	})
	return ev, errors.Join(err, readErr)
}

// inspect takes an IPv4 packet (SOCK_DGRAM strips the link header).
func (w *synAckWatch) inspect(p []byte, ev *packetEvidence) {
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
	sport := binary.BigEndian.Uint16(tcp[0:2])
	dport := binary.BigEndian.Uint16(tcp[2:4])
	const syn, ack = 0x02, 0x10
	flags := tcp[13] & (syn | ack)
	switch {
	case src == w.self && netip.AddrPortFrom(dst, dport) == w.dialed && flags == syn:
		ev.syns++
	case dst == w.self && flags == syn|ack:
		from := netip.AddrPortFrom(src, sport)
		if from == w.dialed {
			ev.answered = true
		} else if !slices.Contains(ev.stray, from) {
			ev.stray = append(ev.stray, from)
		}
	}
}
