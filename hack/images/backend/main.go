// Command backend is the test server of the cluster hack/cluster.sh brings up: it answers every
// HTTP request with one line naming the TCP peer it saw and, on its PROXY-protocol port, the
// client the header named, so a test or `loopguard verify` can tell which path a connection
// took. On that port a connection without a PROXY header (v1 or v2) is closed unanswered, as
// a real backend that requires the header closes it.
//
//	backend -listen :8080 -listen-proxy :8081
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// Prefix starts the answer line, so a client tells it from anything else.
const Prefix = "loopguard-backend "

func main() {
	plain := flag.String("listen", ":8080", "the plain port")
	withProxy := flag.String("listen-proxy", "", "the port that requires a PROXY protocol header (none when empty)")
	flag.Parse()
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
