package volcengine_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/volcengine/volcengine-go-sdk/service/clb"
	sdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/credentials"
	"github.com/volcengine/volcengine-go-sdk/volcengine/request"
	"github.com/volcengine/volcengine-go-sdk/volcengine/session"
	"github.com/volcengine/volcengine-go-sdk/volcengine/volcengineerr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

const (
	cloudAK = "AKLTloopguardprovider"
	cloudSK = "sk-provider-test-secret"
)

// cloud starts the in-process Volcengine CLB API with the given load balancers and returns the
// official SDK client pointed at it, configured as a host would (no SDK retries, so every
// fault reaches loopguard's own classification).
func cloud(t testing.TB, lbs ...clbtest.LoadBalancer) (*clbtest.Server, *clb.CLB) {
	t.Helper()
	srv := clbtest.NewTestServer(t, &clbtest.Options{Credentials: []clbtest.Credential{{AccessKeyID: cloudAK, SecretAccessKey: cloudSK}}})
	for _, lb := range lbs {
		if _, err := srv.AddLoadBalancer(lb); err != nil {
			t.Fatal(err)
		}
	}
	return srv, sdkClient(t, srv, cloudSK)
}

func sdkClient(t testing.TB, srv *clbtest.Server, secret string) *clb.CLB {
	t.Helper()
	cfg := sdk.NewConfig().
		WithRegion(clbtest.DefaultRegion).
		WithCredentials(credentials.NewStaticCredentials(cloudAK, secret, "")).
		WithEndpoint(srv.Endpoint()).
		WithDisableSSL(true).
		WithMaxRetries(0).
		WithHTTPClient(srv.Client())
	sess, err := session.NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clb.New(sess)
}

func lbService(name string, ann map[string]string, ips ...string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if len(ips) > 0 {
		svc.UID = "uid-" + "0000"
	}
	return svc
}

// The three CLBs of the snapshot tests: a reused private CLB whose port-80 listener sends PROXY
// protocol and whose port-8443 listener does not, a private CLB found by its private address,
// and a public CLB found by its EIP.
var (
	reusedPrivate = clbtest.LoadBalancer{ID: "clb-reused", Type: clbtest.TypePrivate, EniAddress: "192.168.0.10",
		Listeners: []clbtest.Listener{
			{ID: "lsn-80", Protocol: "TCP", Port: 80, ProxyProtocolType: clbtest.ProxyProtocolStandard},
			{ID: "lsn-8443", Protocol: "TCP", Port: 8443, ProxyProtocolType: clbtest.ProxyProtocolOff},
		}}
	byPrivateAddr = clbtest.LoadBalancer{ID: "clb-private", Type: clbtest.TypePrivate, EniAddress: "192.168.0.20",
		Listeners: []clbtest.Listener{{ID: "lsn-p80", Protocol: "TCP", Port: 80}}}
	byPublicAddr = clbtest.LoadBalancer{ID: "clb-public", Type: clbtest.TypePublic, EniAddress: "192.168.0.30", EipAddress: "203.0.113.30",
		Listeners: []clbtest.Listener{{ID: "lsn-e80", Protocol: "TCP", Port: 80, ProxyProtocolType: clbtest.ProxyProtocolStandard}}}
)

func TestCLBReaderSnapshot(t *testing.T) {
	srv, client := cloud(t, reusedPrivate, byPrivateAddr, byPublicAddr)
	r := volcengine.NewCLBReader(client, nil)
	svcs := []*corev1.Service{
		lbService("reused", map[string]string{volcengine.AnnotationLoadBalancerID: "clb-reused"}),
		lbService("private", nil, "192.168.0.20"),
		lbService("public", nil, "203.0.113.30"),
		lbService("gone", nil, "192.168.9.9"), // its CLB was deleted
		lbService("new", nil),                 // not created yet: nothing to read
	}
	snap, err := r.Snapshot(context.Background(), svcs...)
	if err != nil {
		t.Fatal(err)
	}
	want := volcengine.CLBSnapshot{}
	put := func(f volcengine.CLBFacts) {
		want[f.ID] = f
		for _, a := range f.Addresses {
			want[a] = f
		}
	}
	put(volcengine.CLBFacts{ID: "clb-reused", AddressType: volcengine.AddressTypePrivate, ProxyProtocol: core.Yes,
		Addresses: []string{"192.168.0.10"},
		Listeners: []volcengine.ListenerFacts{
			{ID: "lsn-80", Protocol: "TCP", Port: 80, ProxyProtocol: core.Yes},
			{ID: "lsn-8443", Protocol: "TCP", Port: 8443, ProxyProtocol: core.No},
		}})
	put(volcengine.CLBFacts{ID: "clb-private", AddressType: volcengine.AddressTypePrivate, ProxyProtocol: core.No,
		Addresses: []string{"192.168.0.20"},
		Listeners: []volcengine.ListenerFacts{{ID: "lsn-p80", Protocol: "TCP", Port: 80, ProxyProtocol: core.No}}})
	put(volcengine.CLBFacts{ID: "clb-public", AddressType: volcengine.AddressTypePublic, ProxyProtocol: core.Yes,
		Addresses: []string{"192.168.0.30", "203.0.113.30"},
		Listeners: []volcengine.ListenerFacts{{ID: "lsn-e80", Protocol: "TCP", Port: 80, ProxyProtocol: core.Yes}}})
	if diff := cmp.Diff(want, snap); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	// One batched lookup by ID, then by address: private first, public only when needed.
	var actions []string
	for _, c := range srv.Calls() {
		actions = append(actions, c.Action+" "+c.Params.Encode())
	}
	wantActions := []string{
		"DescribeLoadBalancers LoadBalancerIds.1=clb-reused&PageSize=20",
		"DescribeLoadBalancers EniAddress=192.168.0.20",
		"DescribeLoadBalancers EniAddress=203.0.113.30",
		"DescribeLoadBalancers EipAddress=203.0.113.30",
		"DescribeLoadBalancers EniAddress=192.168.9.9",
		"DescribeLoadBalancers EipAddress=192.168.9.9",
		"DescribeListeners LoadBalancerId=clb-reused&PageNumber=1&PageSize=100",
		"DescribeListeners LoadBalancerId=clb-private&PageNumber=1&PageSize=100",
		"DescribeListeners LoadBalancerId=clb-public&PageNumber=1&PageSize=100",
	}
	if diff := cmp.Diff(wantActions, actions); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// The proxy-protocol verdict covers the listeners that serve the Service's ports only.
func TestCLBReaderProxyProtocolPerPorts(t *testing.T) {
	_, client := cloud(t, reusedPrivate)
	r := volcengine.NewCLBReader(client, nil)
	ctx := context.Background()
	tests := map[string]struct {
		ports []volcengine.ListenerKey
		want  core.Fact
	}{
		"port 80 sends it":        {ports: []volcengine.ListenerKey{{Protocol: "TCP", Port: 80}}, want: core.Yes},
		"port 8443 does not":      {ports: []volcengine.ListenerKey{{Protocol: "TCP", Port: 8443}}, want: core.No},
		"both ports: they differ": {ports: []volcengine.ListenerKey{{Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 8443}}, want: core.Unknown},
		"no listener serves it":   {ports: []volcengine.ListenerKey{{Protocol: "UDP", Port: 80}}, want: core.Unknown},
		"every listener":          {want: core.Unknown},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, ok, err := r.ReadCLB(ctx, "clb-reused", tc.ports...)
			if err != nil || !ok {
				t.Fatalf("ReadCLB: %v, found %v", err, ok)
			}
			if f.ProxyProtocol != tc.want {
				t.Errorf("ProxyProtocol = %v, want %v", f.ProxyProtocol, tc.want)
			}
		})
	}
	for _, key := range []string{"192.168.0.10", "clb-reused"} {
		if f, ok, err := r.ReadCLB(ctx, key); err != nil || !ok || f.ID != "clb-reused" {
			t.Errorf("ReadCLB(%s) = %v, %v, %v", key, f.ID, ok, err)
		}
	}
	if _, ok, err := r.ReadCLB(ctx, "clb-absent"); ok || err != nil {
		t.Errorf("absent CLB: found %v, err %v", ok, err)
	}
}

func TestCLBReaderPagesAndBatches(t *testing.T) {
	many := clbtest.LoadBalancer{ID: "clb-many", Type: clbtest.TypePrivate, EniAddress: "192.168.1.1"}
	for p := int64(1); p <= 7; p++ {
		many.Listeners = append(many.Listeners, clbtest.Listener{Protocol: "TCP", Port: 1000 + p, ProxyProtocolType: clbtest.ProxyProtocolStandard})
	}
	lbs := []clbtest.LoadBalancer{many}
	var svcs []*corev1.Service
	for i := range 25 {
		id := fmt.Sprintf("clb-batch-%02d", i)
		lbs = append(lbs, clbtest.LoadBalancer{ID: id, Type: clbtest.TypePublic, EipAddress: fmt.Sprintf("203.0.113.%d", 100+i)})
		svcs = append(svcs, lbService(fmt.Sprintf("s%02d", i), map[string]string{volcengine.AnnotationLoadBalancerID: id}))
	}
	srv, client := cloud(t, lbs...)
	r := volcengine.NewCLBReader(client, &volcengine.CLBReaderOptions{PageSize: 3})

	f, ok, err := r.ReadCLB(context.Background(), "clb-many")
	if err != nil || !ok || len(f.Listeners) != 7 || f.ProxyProtocol != core.Yes {
		t.Fatalf("ReadCLB: %+v, %v, %v", f, ok, err)
	}
	if n := len(srv.CallsTo("DescribeListeners")); n != 3 {
		t.Errorf("DescribeListeners calls = %d, want 3 pages of 3", n)
	}

	srv.ResetCalls()
	snap, err := r.Snapshot(context.Background(), svcs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap) != 50 { // 25 IDs + 25 addresses
		t.Errorf("snapshot has %d keys, want 50", len(snap))
	}
	if n := len(srv.CallsTo("DescribeLoadBalancers")); n != 2 {
		t.Errorf("DescribeLoadBalancers calls = %d, want 2 batches of at most 20 IDs", n)
	}
}

func TestCLBReaderFaults(t *testing.T) {
	svc := lbService("reused", map[string]string{volcengine.AnnotationLoadBalancerID: "clb-reused"})
	tests := map[string]struct {
		fault  clbtest.Fault
		secret string
		// retry: a *core.RetryError; code/status: the SDK's RequestFailure reachable with errors.As.
		retry  bool
		code   string
		status int
	}{
		"throttled by the gateway": {fault: clbtest.Fault{Action: "DescribeLoadBalancers", Code: clbtest.CodeFlowLimitExceeded},
			retry: true, code: clbtest.CodeFlowLimitExceeded, status: 429},
		"throttled per account": {fault: clbtest.Fault{Action: "DescribeListeners", Code: clbtest.CodeAccountFlowLimitExceeded},
			retry: true, code: clbtest.CodeAccountFlowLimitExceeded, status: 429},
		"service unavailable": {fault: clbtest.Fault{Action: "DescribeLoadBalancers", Status: http.StatusServiceUnavailable},
			retry: true, code: clbtest.CodeServiceUnavailableTemp, status: 503},
		"throttling in an HTTP 200": {fault: clbtest.Fault{Action: "DescribeListeners", Code: clbtest.CodeFlowLimitExceeded, Status: 200},
			retry: true, code: clbtest.CodeFlowLimitExceeded, status: 200},
		"wrong secret": {secret: "not-the-secret", code: clbtest.CodeSignatureDoesNotMatch, status: 401},
		"bad parameter": {fault: clbtest.Fault{Action: "DescribeLoadBalancers", Code: clbtest.CodeInvalidParameter},
			code: clbtest.CodeInvalidParameter, status: 400},
		"a proxy answers HTML": {fault: clbtest.Fault{Action: "DescribeLoadBalancers", Body: []byte("<html>bad gateway</html>")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv, _ := cloud(t, reusedPrivate)
			secret := cloudSK
			if tc.secret != "" {
				secret = tc.secret
			}
			srv.InjectFault(tc.fault)
			r := volcengine.NewCLBReader(sdkClient(t, srv, secret), &volcengine.CLBReaderOptions{RetryDelay: 2 * time.Second})
			snap, err := r.Snapshot(context.Background(), svc)
			if err == nil {
				t.Fatalf("no error; snapshot %v", snap)
			}
			var re *core.RetryError
			if got := errors.As(err, &re); got != tc.retry {
				t.Errorf("RetryError = %v, want %v: %v", got, tc.retry, err)
			}
			if tc.retry && (re.After != 2*time.Second || !errors.Is(err, core.ErrRetryLater)) {
				t.Errorf("retry after %v, want 2s", re.After)
			}
			if tc.code == "" {
				return
			}
			var rf volcengineerr.RequestFailure
			if !errors.As(err, &rf) || rf.Code() != tc.code || rf.StatusCode() != tc.status {
				t.Errorf("err = %v; want the SDK's RequestFailure %s/%d reachable", err, tc.code, tc.status)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestCLBReaderCancelled(t *testing.T) {
	srv, client := cloud(t, reusedPrivate)
	srv.InjectFault(clbtest.Fault{Delay: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := volcengine.NewCLBReader(client, nil).ReadCLB(ctx, "clb-reused")
	var re *core.RetryError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &re) {
		t.Errorf("err = %v, want the context's deadline and no retry advice", err)
	}
}

// The cloud read feeds the dialect: a reused CLB whose address type no annotation says is
// private by the cloud's word, and its listener's PROXY protocol is known.
func TestCLBReaderEnrichesTheDialect(t *testing.T) {
	_, client := cloud(t, reusedPrivate)
	svc := lbService("reused", map[string]string{
		volcengine.AnnotationLoadBalancerID: "clb-reused",
		volcengine.AnnotationIPMode:         volcengine.IPModeProxy,
	})
	snap, err := volcengine.NewCLBReader(client, nil).Snapshot(context.Background(), svc)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := core.NewCluster(readyProfile())
	tr, err := volcengine.NewDialect(&volcengine.Options{CLBs: snap}).Translate(svc, c)
	if err != nil {
		t.Fatal(err)
	}
	e := tr.Exposure
	if e.Scope != core.Private || e.ProxyProtocol != core.Yes {
		t.Errorf("scope %v, proxy protocol %v; want private and yes from the cloud read", e.Scope, e.ProxyProtocol)
	}
	wantCodes(t, e.Reasons, volcengine.CodeCloudRead)
}

func readyProfile() core.ClusterProfile {
	return core.ClusterProfile{APIVersion: core.ProfileAPIVersion, Kind: core.ProfileKind, Provider: volcengine.Name,
		KubernetesVersion: "v1.32.2", CCMVersion: "v1.43.0", ProxyMode: core.ProxyModeEBPF,
		Dataplane: core.DataplaneProfile{CNI: "vpc-cni", PodInterface: "ipvlan"}}
}

// terseListings wraps the SDK client and drops ProxyProtocolType from DescribeListeners'
// entries, as a listing that carries fewer fields than the attributes call would.
type terseListings struct{ *clb.CLB }

func (c terseListings) DescribeListenersWithContext(ctx sdk.Context, in *clb.DescribeListenersInput, opts ...request.Option) (*clb.DescribeListenersOutput, error) {
	out, err := c.CLB.DescribeListenersWithContext(ctx, in, opts...)
	if out != nil {
		for _, l := range out.Listeners {
			l.ProxyProtocolType = nil
		}
	}
	return out, err
}

// When a listing does not say, the reader asks DescribeListenerAttributes per listener.
func TestCLBReaderFallsBackToListenerAttributes(t *testing.T) {
	srv, client := cloud(t, reusedPrivate)
	f, ok, err := volcengine.NewCLBReader(terseListings{client}, nil).ReadCLB(context.Background(), "clb-reused", volcengine.ListenerKey{Protocol: "TCP", Port: 80})
	if err != nil || !ok || f.ProxyProtocol != core.Yes || f.Listeners[1].ProxyProtocol != core.No {
		t.Fatalf("ReadCLB: %+v, %v, %v", f, ok, err)
	}
	if n := len(srv.CallsTo("DescribeListenerAttributes")); n != 2 {
		t.Errorf("DescribeListenerAttributes calls = %d, want one per listener", n)
	}
}

// TestCLBReaderOnCall: OnCall hears each request with the cloud's code when it failed.
func TestCLBReaderOnCall(t *testing.T) {
	srv, client := cloud(t, reusedPrivate)
	var heard []string
	r := volcengine.NewCLBReader(client, &volcengine.CLBReaderOptions{OnCall: func(action, code string) {
		heard = append(heard, action+" "+code)
	}})
	svc := lbService("reused", map[string]string{volcengine.AnnotationLoadBalancerID: "clb-reused"})
	if _, err := r.Snapshot(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	srv.InjectFault(clbtest.Fault{Action: "DescribeLoadBalancers", Code: clbtest.CodeFlowLimitExceeded})
	if _, err := r.Snapshot(context.Background(), svc); err == nil {
		t.Fatal("no error from the throttled read")
	}
	want := []string{"DescribeLoadBalancers ", "DescribeListeners ", "DescribeLoadBalancers " + clbtest.CodeFlowLimitExceeded}
	if !slices.Equal(heard, want) {
		t.Errorf("OnCall heard %q, want %q", heard, want)
	}
	if n := len(srv.Calls()); n != len(heard) {
		t.Errorf("clbtest answered %d calls, OnCall heard %d", n, len(heard))
	}
}
