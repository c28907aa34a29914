package volcengine_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/clb"
	sdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/request"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	"github.com/volcengine/volcengine-go-sdk/volcengine/volcengineerr"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// clientFor is sdkClient with every part a caller can get wrong: the key pair, the region and
// the service the requests are signed for ("" keeps clb).
func clientFor(t *testing.T, srv *clbtest.Server, ak, sk, region, service string) *clb.CLB {
	t.Helper()
	cfg := sdk.NewConfig().WithRegion(region).
		WithCredentials(credentials.NewStaticCredentials(ak, sk, "")).
		WithEndpoint(srv.Endpoint()).WithDisableSSL(true).WithMaxRetries(0).WithHTTPClient(srv.Client())
	sess, err := session.NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := clb.New(sess)
	if service != "" {
		// What a client built for another service's API would sign.
		c.Handlers.Sign.PushFront(func(r *request.Request) { r.ClientInfo.SigningName = service })
	}
	return c
}

// TestCLBReaderAuthenticationErrors: every way the gateway refuses a call reaches the caller
// as core.ErrUnauthenticated saying what to check, with the SDK's error reachable and the
// secret nowhere in the text.
func TestCLBReaderAuthenticationErrors(t *testing.T) {
	svc := lbService("reused", map[string]string{volcengine.AnnotationLoadBalancerID: "clb-reused"})
	for name, tc := range map[string]struct {
		ak, sk, region, service string
		skew                    time.Duration
		code, want              string
	}{
		"wrong key":         {sk: "not-the-secret-0123", code: clbtest.CodeSignatureDoesNotMatch, want: "check the SecretAccessKey"},
		"unknown key id":    {ak: "AKLTnobody000000", code: clbtest.CodeInvalidAccessKey, want: "check the access key ID"},
		"expired timestamp": {skew: time.Hour, code: clbtest.CodeInvalidTimestamp, want: "check this machine's time"},
		"wrong region":      {region: "cn-nowhere-1", code: clbtest.CodeInvalidRegion, want: "check the region"},
		"wrong service":     {service: "ecs", code: clbtest.CodeServiceNotFound, want: "sign for the clb service"},
	} {
		t.Run(name, func(t *testing.T) {
			opts := &clbtest.Options{Credentials: []clbtest.Credential{{AccessKeyID: cloudAK, SecretAccessKey: cloudSK}}, Regions: []string{clbtest.DefaultRegion}}
			if tc.skew != 0 {
				opts.Now = func() time.Time { return time.Now().Add(tc.skew) }
			}
			srv := clbtest.NewTestServer(t, opts)
			if _, err := srv.AddLoadBalancer(reusedPrivate); err != nil {
				t.Fatal(err)
			}
			ak, sk, region := cmp.Or(tc.ak, cloudAK), cmp.Or(tc.sk, cloudSK), cmp.Or(tc.region, clbtest.DefaultRegion)
			_, err := volcengine.NewCLBReader(clientFor(t, srv, ak, sk, region, tc.service), nil).Snapshot(context.Background(), svc)
			if !errors.Is(err, core.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want core.ErrUnauthenticated saying %q", err, tc.want)
			}
			if core.BlockerOf(err).Kind != "unauthenticated" {
				t.Errorf("kind %s", core.BlockerOf(err).Kind)
			}
			var rf volcengineerr.RequestFailure
			if !errors.As(err, &rf) || rf.Code() != tc.code {
				t.Errorf("the SDK's error is not reachable with code %s: %v", tc.code, err)
			}
			var re *core.RetryError
			if errors.As(err, &re) {
				t.Errorf("a refusal is not retried: %v", err)
			}
			for _, secret := range []string{sk, cloudSK, ak} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error carries %q: %v", secret, err)
				}
			}
		})
	}
}

// TestCLBReaderIAMActions: with exactly volcengine.CLBReaderIAMActions granted the reader
// reads; with any one missing it fails with core.ErrUnauthenticated naming the IAM action to
// grant (it only reads, so nothing can be half-written).
func TestCLBReaderIAMActions(t *testing.T) {
	all := volcengine.CLBReaderIAMActions()
	svc := lbService("reused", map[string]string{volcengine.AnnotationLoadBalancerID: "clb-reused"})
	read := func(t *testing.T, allowed []string) (*clbtest.Server, error) {
		srv := clbtest.NewTestServer(t, &clbtest.Options{Credentials: []clbtest.Credential{{AccessKeyID: cloudAK, SecretAccessKey: cloudSK}}, AllowedActions: allowed})
		// A server group on the port-80 listener, so the reader reads its backends too.
		lb := reusedPrivate
		lb.Listeners = slices.Clone(lb.Listeners)
		lb.Listeners[0].ServerGroupID = "rsp-80"
		lb.ServerGroups = []clbtest.ServerGroup{{ID: "rsp-80", Servers: []clbtest.BackendServer{eniPodA}}}
		if _, err := srv.AddLoadBalancer(lb); err != nil {
			t.Fatal(err)
		}
		// terseListings drops the listings' PROXY-protocol field, so the reader also needs
		// DescribeListenerAttributes, its fallback.
		_, err := volcengine.NewCLBReader(terseListings{sdkClient(t, srv, cloudSK)}, nil).Snapshot(context.Background(), svc)
		return srv, err
	}
	t.Run("all granted", func(t *testing.T) {
		srv, err := read(t, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range srv.Calls() {
			if !slices.Contains(all, "clb:"+c.Action) {
				t.Errorf("called %s, which CLBReaderIAMActions does not list", c.Action)
			}
		}
	})
	for _, missing := range all {
		t.Run("without "+missing, func(t *testing.T) {
			_, err := read(t, slices.DeleteFunc(slices.Clone(all), func(a string) bool { return a == missing }))
			if !errors.Is(err, core.ErrUnauthenticated) || !strings.Contains(err.Error(), "IAM permission for "+missing) {
				t.Fatalf("error %v: want core.ErrUnauthenticated naming %s", err, missing)
			}
		})
	}
}
