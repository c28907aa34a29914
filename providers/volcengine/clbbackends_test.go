package volcengine_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/volcengine"
	"github.com/loopguard/loopguard/providers/volcengine/clbtest"
)

// backendLB is a private CLB whose port-80 listener sends to server group rsp-80 with the
// given backends, and whose port-8443 listener (not the Service's) to rsp-8443.
func backendLB(servers ...clbtest.BackendServer) clbtest.LoadBalancer {
	return clbtest.LoadBalancer{ID: "clb-backends", Type: clbtest.TypePrivate, EniAddress: "192.168.0.40",
		ServerGroups: []clbtest.ServerGroup{
			{ID: "rsp-80", Servers: servers},
			{ID: "rsp-8443", Servers: []clbtest.BackendServer{{ID: "rs-x", Type: "ecs", InstanceID: "i-other", IP: "192.168.1.9", Port: 31443}}},
		},
		Listeners: []clbtest.Listener{
			{ID: "lsn-80", Protocol: "TCP", Port: 80, ServerGroupID: "rsp-80"},
			{ID: "lsn-8443", Protocol: "TCP", Port: 8443, ServerGroupID: "rsp-8443"},
		}}
}

var (
	eniPodA = clbtest.BackendServer{ID: "rs-1", Type: "eni", InstanceID: "eni-pod-a", IP: "192.168.1.5", Port: 8080, Weight: 100}
	eniPodB = clbtest.BackendServer{ID: "rs-2", Type: "eni", InstanceID: "eni-pod-b", IP: "192.168.1.7", Port: 8080, Weight: 100}
	ecsNode = clbtest.BackendServer{ID: "rs-3", Type: "ecs", InstanceID: "i-node-b", IP: "192.168.1.6", Port: 30080, Weight: 100}
)

// TestCLBReaderBackends: the reader reads the server group of each listener serving the
// Service's ports with DescribeServerGroupAttributes (once per group, not the others), keeps
// Servers[] (Type, Ip, InstanceId, Port), and judges them.
func TestCLBReaderBackends(t *testing.T) {
	srv, client := cloud(t, backendLB(eniPodA, eniPodB))
	f, ok, err := volcengine.NewCLBReader(client, nil).ReadCLB(context.Background(), "clb-backends", volcengine.ListenerKey{Protocol: "TCP", Port: 80})
	if err != nil || !ok {
		t.Fatalf("ReadCLB: %v, %v", ok, err)
	}
	want := []volcengine.ServerGroupFacts{{ID: "rsp-80", Type: "instance", Servers: []volcengine.BackendServer{
		{Type: "eni", IP: "192.168.1.5", InstanceID: "eni-pod-a", Port: 8080},
		{Type: "eni", IP: "192.168.1.7", InstanceID: "eni-pod-b", Port: 8080},
	}}}
	if diff := cmp.Diff(want, f.ServerGroups); diff != "" {
		t.Errorf("server groups (-want +got):\n%s", diff)
	}
	if f.Backends != volcengine.BackendsENI || f.Listeners[0].ServerGroupID != "rsp-80" {
		t.Errorf("backends %q, listener group %q", f.Backends, f.Listeners[0].ServerGroupID)
	}
	calls := srv.CallsTo("DescribeServerGroupAttributes")
	if len(calls) != 1 || calls[0].Params.Get("ServerGroupId") != "rsp-80" {
		t.Errorf("DescribeServerGroupAttributes calls %v, want one for rsp-80", calls)
	}
}

// TestBackendsSetTheBinding: the backends the cloud lists decide the binding, over the
// pass-through annotation: eni is direct to Pod, ecs the NodePort binding externalTrafficPolicy
// gives; both at once, or a type that is neither, leave it unknown (the model has one binding
// per Service, and either choice would misstate how often a connection lands on the client's
// own node); a group without servers says nothing, and the annotation decides as without a read.
func TestBackendsSetTheBinding(t *testing.T) {
	odd := clbtest.BackendServer{ID: "rs-4", Type: "ip", IP: "192.168.1.8", Port: 8080}
	for name, tc := range map[string]struct {
		servers     []clbtest.BackendServer
		passThrough bool
		local       bool
		want        core.Binding
		backends    volcengine.Backends
		code        core.Code
	}{
		"eni":                      {servers: []clbtest.BackendServer{eniPodA, eniPodB}, want: core.DirectToPod, backends: volcengine.BackendsENI, code: volcengine.CodeBackendsRead},
		"eni with pass-through":    {servers: []clbtest.BackendServer{eniPodA}, passThrough: true, want: core.DirectToPod, backends: volcengine.BackendsENI, code: volcengine.CodeBackendsRead},
		"ecs":                      {servers: []clbtest.BackendServer{ecsNode}, want: core.NodePortCluster, backends: volcengine.BackendsECS, code: volcengine.CodeBackendsRead},
		"ecs, Local":               {servers: []clbtest.BackendServer{ecsNode}, local: true, want: core.NodePortLocal, backends: volcengine.BackendsECS, code: volcengine.CodeBackendsRead},
		"ecs despite pass-through": {servers: []clbtest.BackendServer{ecsNode}, passThrough: true, want: core.NodePortCluster, backends: volcengine.BackendsECS, code: volcengine.CodeBackendsRead},
		"mixed":                    {servers: []clbtest.BackendServer{eniPodA, ecsNode}, want: core.BindingUnknown, backends: volcengine.BackendsMixed, code: volcengine.CodeBackendsRead},
		"unrecognised":             {servers: []clbtest.BackendServer{eniPodA, odd}, want: core.BindingUnknown, backends: volcengine.BackendsUnrecognised, code: volcengine.CodeBackendsRead},
		"no servers, pass-through": {passThrough: true, want: core.DirectToPod, backends: volcengine.BackendsNotRead, code: volcengine.CodePassThrough},
		"no servers":               {want: core.NodePortCluster, backends: volcengine.BackendsNotRead, code: volcengine.CodeNodePortBackends},
	} {
		t.Run(name, func(t *testing.T) {
			_, client := cloud(t, backendLB(tc.servers...))
			ann := map[string]string{volcengine.AnnotationLoadBalancerID: "clb-backends", volcengine.AnnotationIPMode: volcengine.IPModeProxy}
			if tc.passThrough {
				ann[volcengine.AnnotationPassThrough] = "true"
			}
			svc := lbService("web", ann)
			if tc.local {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			snap, err := volcengine.NewCLBReader(client, nil).Snapshot(context.Background(), svc)
			if err != nil {
				t.Fatal(err)
			}
			if got := snap["clb-backends"].Backends; got != tc.backends {
				t.Errorf("backends %q, want %q", got, tc.backends)
			}
			c, _ := core.NewCluster(readyProfile())
			res, err := core.Evaluate(volcengine.NewDialect(&volcengine.Options{CLBs: snap}), svc, c, core.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Exposure.Binding != tc.want {
				t.Errorf("binding %q, want %q", res.Exposure.Binding, tc.want)
			}
			wantCodes(t, res.Exposure.Reasons, tc.code)
			// Proxy mode, a private CLB that keeps the client's address: the path loops
			// whatever the binding; the binding says how often.
			if res.Assessment.Risk != core.RiskAtRisk {
				t.Errorf("risk %q, want at-risk", res.Assessment.Risk)
			}
			if unknown := wantBindingUnknown(res); unknown != (tc.want == core.BindingUnknown) {
				t.Errorf("binding %q: core's %s reason present = %v", tc.want, core.CodeBindingUnknown, unknown)
			}
		})
	}
}

func wantBindingUnknown(res *core.Result) bool {
	_, ok := reasonFor(res.Assessment.Reasons, core.CodeBindingUnknown)
	return ok && !res.Assessment.WorstCase.Known()
}
