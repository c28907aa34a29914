package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// Prefix starts the answer line, so a client tells it from anything else.
const Prefix = "loopguard-backend "

func main() {
	plain := flag.String("listen", ":8080", "the plain port")
	withProxy := flag.String("listen-proxy", "", "the port that requires a PROXY protocol header (none when empty)")
	dial := flag.String("dial", "", "be the client: connect to this address")
	n := flag.Int("n", 3, "with -dial: connections, one after another")
	timeout := flag.Duration("timeout", 2500*time.Millisecond, "with -dial: bound on each connection's connect and on its answer")
	flag.Parse()
	if *dial != "" {
		os.Exit(client(*dial, *n, *timeout))
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	errc := make(chan error, 2)
	l, err := net.Listen("tcp", *plain)
	if err != nil {
		log.Fatal(err)
	}
	go func() { errc <- serve(l, false) }()
	if *withProxy != "" {
		pl, err := net.Listen("tcp", *withProxy)
		if err != nil {
			log.Fatal(err)
		}
		// REQUIRE: a connection that does not start with a header fails its first read.
		ppl := &proxyproto.Listener{Listener: pl, ReadHeaderTimeout: 5 * time.Second,
			ConnPolicy: func(proxyproto.ConnPolicyOptions) (proxyproto.Policy, error) { return proxyproto.REQUIRE, nil }}
		go func() { errc <- serve(ppl, true) }()
	}
	log.Printf("backend: serving %s (plain) and %q (PROXY protocol required)", *plain, *withProxy)
	log.Fatal(<-errc)
}

// Attempt is one client connection, as -dial reports it.
type Attempt struct {
	// Outcome: ok (an answer line), timeout (no connection), refused, reset, closed (no answer),
	// no-answer (connected, nothing came back in time), or error.
	Outcome string `json:"outcome"`
	Answer  string `json:"answer,omitempty"`
	Error   string `json:"error,omitempty"`
	Millis  int64  `json:"ms"`
}

func client(addr string, n int, timeout time.Duration) int {
	var out strings.Builder
	for range n {
		start := time.Now()
		a := attempt(addr, timeout)
		a.Millis = time.Since(start).Milliseconds()
		b, _ := json.Marshal(a)
		out.Write(b)
		out.WriteByte('\n')
	}
	fmt.Print(out.String())
	_ = os.WriteFile("/dev/termination-log", []byte(out.String()), 0o644)
	return 0
}

func attempt(addr string, timeout time.Duration) Attempt {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return Attempt{Outcome: "timeout", Error: err.Error()}
		case errors.Is(err, syscall.ECONNREFUSED):
			return Attempt{Outcome: "refused", Error: err.Error()}
		}
		return Attempt{Outcome: "error", Error: err.Error()}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", addr); err != nil {
		return Attempt{Outcome: "reset", Error: err.Error()}
	}
	body, err := io.ReadAll(c)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, Prefix) {
			return Attempt{Outcome: "ok", Answer: strings.TrimSpace(l)}
		}
	}
	var ne net.Error
	switch {
	case err == nil:
		return Attempt{Outcome: "closed"}
	case errors.As(err, &ne) && ne.Timeout():
		return Attempt{Outcome: "no-answer", Error: err.Error()}
	case errors.Is(err, syscall.ECONNRESET):
		return Attempt{Outcome: "reset", Error: err.Error()}
	}
	return Attempt{Outcome: "error", Error: err.Error()}
}

func serve(l net.Listener, proxy bool) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go handle(c, proxy)
	}
}

func handle(c net.Conn, proxy bool) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	peer := c.RemoteAddr().String()
	src := peer
	if pc, ok := c.(*proxyproto.Conn); ok {
		peer = pc.Raw().RemoteAddr().String()
	}
	r := bufio.NewReader(c)
	// The request line and headers, up to the blank line; the first read also parses the
	// PROXY header on the PROXY port.
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			why := err.Error()
			if errors.Is(err, proxyproto.ErrNoProxyProtocol) || strings.Contains(why, "proxy") {
				log.Printf("rejected %s: no PROXY protocol header: %v", peer, err)
			} else {
				log.Printf("closed %s before a request: %v", peer, err)
			}
			return
		}
		if strings.TrimRight(line, "\r\n") == "" {
			break
		}
	}
	if proxy {
		src = c.RemoteAddr().String() // the header's source, after the first read
	}
	host, _ := os.Hostname()
	body := fmt.Sprintf("%speer=%s src=%s pod=%s node=%s\n", Prefix, peer, src, host, os.Getenv("NODE_NAME"))
	fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	log.Printf("answered %s (src %s)", peer, src)
}
