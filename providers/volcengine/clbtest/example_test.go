package clbtest_test

import (
	"fmt"
	"log"

	"github.com/volcengine/volcengine-go-sdk/service/clb"
	"github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"

	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// Start the server, seed a private CLB whose TCP listener sends PROXY
// protocol, and read both facts back with the official SDK client.
func Example() {
	const ak, sk = "AKLTexample", "example-secret"
	srv, err := clbtest.NewServer(&clbtest.Options{
		Credentials: []clbtest.Credential{{AccessKeyID: ak, SecretAccessKey: sk}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	_, err = srv.AddLoadBalancer(clbtest.LoadBalancer{
		ID:         "clb-example",
		Type:       clbtest.TypePrivate,
		EniAddress: "192.168.0.10",
		Listeners: []clbtest.Listener{{
			ID:                "lsn-example",
			Protocol:          "TCP",
			Port:              443,
			ProxyProtocolType: clbtest.ProxyProtocolStandard,
		}},
	})
	if err != nil {
		log.Fatal(err)
	}

	cfg := volcengine.NewConfig().
		WithRegion(clbtest.DefaultRegion).
		WithCredentials(credentials.NewStaticCredentials(ak, sk, "")).
		WithEndpoint(srv.Endpoint()).
		WithDisableSSL(true).
		WithMaxRetries(0).
		WithHTTPClient(srv.Client()) // bypasses HTTP(S)_PROXY
	sess, err := session.NewSession(cfg)
	if err != nil {
		log.Fatal(err)
	}
	client := clb.New(sess)

	lb, err := client.DescribeLoadBalancerAttributes(&clb.DescribeLoadBalancerAttributesInput{
		LoadBalancerId: volcengine.String("clb-example"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: type %s, private address %s\n", *lb.LoadBalancerId, *lb.Type, *lb.EniAddress)

	l, err := client.DescribeListenerAttributes(&clb.DescribeListenerAttributesInput{
		ListenerId: lb.Listeners[0].ListenerId,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s:%d proxy protocol %s\n", *l.ListenerId, *l.Protocol, *l.Port, *l.ProxyProtocolType)
	// Output:
	// clb-example: type private, private address 192.168.0.10
	// lsn-example TCP:443 proxy protocol standard
}
