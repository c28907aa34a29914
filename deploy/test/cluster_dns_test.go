package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/loopguard/loopguard/adapters/kube/corednsedit"
	"github.com/loopguard/loopguard/internal/cluster"
	"github.com/loopguard/loopguard/internal/cluster/machinelb"
)

// applyReport is the part of `loopguard apply -o json` the test reads.
type applyReport struct {
	Plans []struct {
		Object   struct{ Kind, Namespace, Name string } `json:"object"`
		Decision struct{ Remedy string }                `json:"decision"`
		Status   string                                 `json:"status"`
		Written  []struct {
			Object *struct{ Kind, Namespace, Name string } `json:"object"`
			To     string                                  `json:"to"`
		} `json:"written"`
		ForUser []struct{ Field string }        `json:"forUser"`
		Error   *struct{ Kind, Message string } `json:"error"`
	} `json:"plans"`
}

func (e *clusterEnv) apply(t *testing.T, args ...string) (applyReport, int, string) {
	t.Helper()
	stdout, stderr, code := e.cliRun(t, append([]string{"apply", "--profile", e.profile, "-o", "json"}, args...)...)
	var rep applyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Plans) != 1 {
		t.Fatalf("apply %v: exit %d, %d plans, %v\nstdout:\n%s\nstderr:\n%s", args, code, len(rep.Plans), err, stdout, stderr)
	}
	return rep, code, stdout
}

func (e *clusterEnv) corefile(t *testing.T) (string, string) {
	t.Helper()
	cm, err := e.kube.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["Corefile"], cm.ResourceVersion
}

func (e *clusterEnv) setCorefile(t *testing.T, corefile string) {
	t.Helper()
	cm, err := e.kube.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["Corefile"] = corefile
	if _, err := e.kube.CoreV1().ConfigMaps("kube-system").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lbAddress is the address the cloud's DNS answers host with (its hosts file).
func (e *clusterEnv) lbAddress(t *testing.T, host string) string {
	t.Helper()
	var addr string
	eventually(t, "the cloud's DNS knows "+host, 30*time.Second, func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(e.c.Dir(), "router", "lb-hosts"))
		if err != nil {
			return false, err.Error()
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[1] == host {
				addr = f[0]
				return true, ""
			}
		}
		return false, string(b)
	})
	return addr
}

// corednsServers are the DNS servers a Pod's query can reach, keyed by a name for messages:
// every running CoreDNS Pod and every address the cluster DNS Service's EndpointSlices list
// (ready or still serving, so a terminating replica kube-proxy still sends to counts too).
// complete is false, with why, while fewer CoreDNS Pods run than the Deployment asks for: a
// replica that has not started yet would read the Corefile after the check.
func (e *clusterEnv) corednsServers(t *testing.T) (servers map[string]string, complete bool, why string) {
	t.Helper()
	ctx := t.Context()
	d, err := e.kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := e.kube.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := e.kube.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
	if err != nil {
		t.Fatal(err)
	}
	servers = map[string]string{}
	byIP := map[string]bool{}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		running++
		servers["Pod "+p.Name] = p.Status.PodIP
		byIP[p.Status.PodIP] = true
	}
	for _, s := range eps.Items {
		for _, ep := range s.Endpoints {
			if !unsetOrTrue(ep.Conditions.Ready) && !unsetOrTrue(ep.Conditions.Serving) {
				continue
			}
			for _, a := range ep.Addresses {
				if !byIP[a] {
					servers["endpoint "+a] = a
					byIP[a] = true
				}
			}
		}
	}
	want := 1 // the API server's default for an unset spec.replicas
	if d.Spec.Replicas != nil {
		want = int(*d.Spec.Replicas)
	}
	if running < want {
		return servers, false, fmt.Sprintf("%d of the Deployment's %d CoreDNS replicas run", running, want)
	}
	return servers, true, ""
}

// unsetOrTrue reads an EndpointConditions field as discovery.k8s.io/v1 says consumers must:
// unset means true.
func unsetOrTrue(b *bool) bool { return b == nil || *b }

// corednsAnswers asks each of servers directly (from the router namespace, over TCP, with a
// deadline per query) for the addresses of host. The cluster DNS Service picks a replica per
// query, and each replica's reload plugin reads the Corefile on its own clock (after kubelet
// refreshed its ConfigMap volume), so a change has taken effect only once every replica
// answers with it.
func (e *clusterEnv) corednsAnswers(t *testing.T, servers map[string]string, host string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for name, ip := range servers {
		server := net.JoinHostPort(ip, "53")
		// The Go resolver speaks DNS over TCP on a connection that is not a PacketConn.
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return e.c.DialRouter(ctx, server)
		}}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		addrs, err := r.LookupHost(ctx, host+".")
		cancel()
		if err != nil {
			got[name] = err.Error()
			continue
		}
		slices.Sort(addrs)
		got[name] = strings.Join(addrs, ",")
	}
	return got
}

// waitCoreDNS waits, up to timeout, until as many CoreDNS Pods run as the Deployment asks for
// and every one of them, and every other address the cluster DNS Service sends queries to,
// answers host with want (and nothing else).
func (e *clusterEnv) waitCoreDNS(t *testing.T, what, host, want string, timeout time.Duration) {
	t.Helper()
	eventually(t, what, timeout, func() (bool, string) {
		servers, complete, why := e.corednsServers(t)
		if !complete {
			return false, why
		}
		got := e.corednsAnswers(t, servers, host)
		for _, a := range got {
			if a != want {
				return false, fmt.Sprint(got)
			}
		}
		return len(got) > 0, fmt.Sprint(got)
	})
}

// testDNSSteering: a load balancer that publishes only a hostname (no address for kube-proxy
// to intercept) and keeps the client's address loops for a client on the backend's node;
// loopguard's remedy is dns-steering, which `apply --coredns edit` carries out in CoreDNS's
// Corefile. A real Pod resolving the hostname then reaches the Service without touching the LB;
// `--coredns take-back` restores the Corefile byte for byte; a Corefile with an import is
// reported as managed and left as it was.
func (e *clusterEnv) testDNSSteering(t *testing.T) {
	const ns = "dns"
	e.namespace(t, ns)
	e.backend(t, ns)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{
			machinelb.AnnotationForwarding: string(machinelb.DNAT), machinelb.AnnotationAddressType: "hostname",
			"loopguard.io/lb-scope": "private", "loopguard.io/lb-source-nat": "false"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector: map[string]string{"app": "backend"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := e.kube.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	host := "web-" + ns + "." + cluster.LBDomain
	eventually(t, "the LB publishes "+host, 60*time.Second, func() (bool, string) {
		got, err := e.kube.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		in := got.Status.LoadBalancer.Ingress
		return len(in) == 1 && in[0].Hostname == host && in[0].IP == "", fmt.Sprintf("%+v", in)
	})
	vip := e.lbAddress(t, host)
	e.countSYNs(t, vip)
	eventually(t, "the LB at "+vip+" answers", 30*time.Second, func() (bool, string) {
		a := e.routerGet(t, vip+":80")
		return a.Outcome == "ok", fmt.Sprintf("%+v", a)
	})

	// Before: the name resolves to the LB, which sends the connection back to the client's own
	// node with the client's address: the loop.
	e.waitCoreDNS(t, "every CoreDNS replica answers "+host+" with the LB's "+vip, host, vip, 30*time.Second)
	before := e.syns(t, vip)
	attempts, _ := e.dialFrom(t, ns, backendNode, host+":80", 2)
	for _, a := range attempts {
		if a.Outcome != "timeout" {
			t.Errorf("before steering, from the backend's node: %+v, want the loop (timeout)", a)
		}
	}
	if e.syns(t, vip) == before {
		t.Errorf("before steering, the connections did not reach the LB")
	}

	original, _ := e.corefile(t)
	rep, code, out := e.apply(t, "--object", "Service/"+ns+"/web", "--coredns", "edit")
	p := rep.Plans[0]
	if code != 0 || p.Decision.Remedy != "dns-steering" || p.Status != "applied" || len(p.Written) != 1 || p.Written[0].Object == nil || p.Written[0].Object.Name != "coredns" {
		t.Fatalf("apply --coredns edit: exit %d, want 0, dns-steering applied to ConfigMap kube-system/coredns:\n%s", code, out)
	}
	owner := "Service " + ns + "/web"
	rules := []corednsedit.Rewrite{{Name: host, Target: "web." + ns + ".svc." + cluster.ClusterDomain}}
	want, err := corednsedit.Edit(original, owner, rules)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.corefile(t); got != want {
		t.Fatalf("the Corefile after apply --coredns edit:\n%s\nwant:\n%s", got, want)
	}
	t.Logf("Corefile after apply --coredns edit:\n%s", want)

	// After: once kubelet has refreshed the ConfigMap volume and CoreDNS's reload plugin read it
	// (up to about a minute with kubeadm's `reload`), the name answers the Service's ClusterIP.
	// Every replica must have reloaded: the Pod's queries go to either.
	svcNow, err := e.kube.CoreV1().Services(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.waitCoreDNS(t, "every CoreDNS replica answers "+host+" with the Service's ClusterIP "+svcNow.Spec.ClusterIP,
		host, svcNow.Spec.ClusterIP, 180*time.Second)
	t.Logf("steering took effect in every CoreDNS replica %s after the edit", time.Since(start).Round(time.Second))
	syns := e.syns(t, vip)
	attempts, clientIP := e.dialFrom(t, ns, backendNode, host+":80", 3)
	for _, a := range attempts {
		if a.Outcome != "ok" || a.answerField("peer") == cluster.RouterAddr.String() {
			t.Errorf("steered, from the backend's node (client %s): %+v, want an answer that did not come through the LB", clientIP, a)
		}
	}
	if e.syns(t, vip) != syns {
		t.Errorf("steered connections reached the LB")
	}
	if rep, code, out := e.apply(t, "--object", "Service/"+ns+"/web", "--coredns", "edit"); code != 0 || len(rep.Plans[0].Written) != 0 {
		t.Errorf("a second apply --coredns edit: exit %d, want 0 and nothing written:\n%s", code, out)
	}

	// Taking the remedy back restores the Corefile byte for byte; a second time writes nothing.
	if _, code, out := e.apply(t, "--object", "Service/"+ns+"/web", "--coredns", "take-back"); code != 0 {
		t.Fatalf("apply --coredns take-back: exit %d:\n%s", code, out)
	}
	if got, _ := e.corefile(t); got != original {
		t.Errorf("take-back did not restore the Corefile:\n%s\nwant:\n%s", got, original)
	}
	e.waitCoreDNS(t, "after take-back, every CoreDNS replica answers "+host+" with the LB's "+vip, host, vip, 180*time.Second)
	if rep, code, out := e.apply(t, "--object", "Service/"+ns+"/web", "--coredns", "take-back"); code != 0 || rep.Plans[0].Status != "up-to-date" {
		t.Errorf("a second take-back: exit %d, want 0 and up-to-date:\n%s", code, out)
	}

	// A Corefile that imports other files is another tool's: reported, not written.
	managed := strings.Replace(original, "    loadbalance\n", "    loadbalance\n    import /etc/coredns/custom/*.override\n", 1)
	if managed == original {
		t.Fatal("the Corefile has no loadbalance line to add an import after")
	}
	e.setCorefile(t, managed)
	_, rv := e.corefile(t)
	rep, code, out = e.apply(t, "--object", "Service/"+ns+"/web", "--coredns", "edit")
	if p := rep.Plans[0]; code != 3 || p.Error == nil || p.Error.Kind != "managed" || !strings.Contains(p.Error.Message, "import") {
		t.Errorf("apply --coredns edit on a Corefile with an import: exit %d, want 3 and a managed error naming the import:\n%s", code, out)
	}
	if got, gotRV := e.corefile(t); got != managed || gotRV != rv {
		t.Errorf("the managed Corefile was written (resourceVersion %s → %s)", rv, gotRV)
	}
	e.setCorefile(t, original)
}
