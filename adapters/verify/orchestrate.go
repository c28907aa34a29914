package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/adapters/verify/probe"
	"github.com/loopguard/loopguard/core"
)

// Labels on every probe Pod: `kubectl delete pod -A -l app.kubernetes.io/managed-by=loopguard-verify`
// removes anything a killed run left behind.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "loopguard-verify"
	LabelService   = "verify.loopguard.io/service"
	LabelSide      = "verify.loopguard.io/side"
	// LabelServiceNamespace is the Service's namespace, on a probe Pod that runs elsewhere
	// (Options.Namespace).
	LabelServiceNamespace = "verify.loopguard.io/service-namespace"
	// ContainerName is the probe Pod's only container.
	ContainerName = "probe"
)

// Side is where a probe Pod runs relative to the Service's backends.
type Side string

const (
	// BackendNode: a node that holds a ready backend (where the loop happens).
	BackendNode Side = "backend-node"
	// OtherNode: a node that holds none.
	OtherNode Side = "other-node"
)

// Options bound a run. The zero value of every field but Image has a safe default.
type Options struct {
	// Image is the loopguard image whose binary has the probe subcommand; required.
	Image string
	// Command runs the probe in Image; nil means ["/loopguard", "probe"].
	Command []string
	// Connections per address, ConnectTimeout and ReadTimeout per connection: see
	// probe.Spec (zero: its defaults, which are also its bounds).
	Connections                 int
	ConnectTimeout, ReadTimeout time.Duration
	// NoProxyCheck turns off the probe's PROXY-header check connection.
	NoProxyCheck bool
	// StartTimeout bounds the wait for a probe Pod to start running; zero means 60 s. A Pod
	// that has not started by then (no kubelet, an image that is never pulled) is reported and
	// removed.
	StartTimeout time.Duration
	// Resources of the probe container; nil means requests of 10m CPU and 16Mi memory,
	// limits of 100m and 64Mi.
	Resources *corev1.ResourceRequirements
	// Parallel bounds the Services verified at once (two probe Pods each); zero means 4.
	Parallel int
	// Progress, when set, is told about each step.
	Progress func(Event)
	// Namespace is where the probe Pods run; "" means each Service's own namespace, where
	// the Service owns them. A host that may create Pods in one namespace only (the in-cluster
	// controller's probe namespace) names it here: a Pod's owner must be in its namespace, so
	// there the Pods are owned by Owner, or by nothing (and the host removes what a killed
	// run left, by the labels). The loop is a node's, not a namespace's: where the Pod runs
	// does not change what it observes.
	Namespace string
	// Owner owns the probe Pods created outside their Service's namespace (the controller's
	// own Pod, so that removing the controller removes them); it must live in Namespace.
	Owner *metav1.OwnerReference
	// Labels are added to every probe Pod's labels (a host's own mark, for its clean-up).
	Labels map[string]string
}

// Event is one step of a run, for a progress display.
type Event struct {
	Object core.ObjectRef
	Side   Side
	Node   string
	// Pod is the probe Pod, Phase what the run is doing with it: created, running, done,
	// deleted, failed.
	Pod, Phase string
	Detail     string
}

// Target is one exposure to verify.
type Target struct {
	// Service is the LoadBalancer Service as read from the cluster: its namespace, UID (the
	// probe Pods' owner), ports and status.loadBalancer.ingress addresses.
	Service *corev1.Service
	// Exposure is what the dialect made of it (core.Evaluate); Predict asks core.Assess about
	// it for each client placement. Placement.Backends names the nodes that hold backends.
	Exposure *core.Exposure
	// Nodes are the cluster's nodes a probe Pod may run on: Ready, not cordoned.
	Nodes []string
}

// Report is a whole run.
type Report struct {
	Exposures []ExposureReport `json:"exposures"`
	// Agree counts placements whose observation agrees with the prediction, Disagree those
	// that do not, Errors those with an error (no observation, or a probe Pod that could not
	// be deleted).
	Agree    int `json:"agree"`
	Disagree int `json:"disagree"`
	Errors   int `json:"errors"`
}

// ExposureReport is one exposure: the addresses probed and each client placement.
type ExposureReport struct {
	Object     core.ObjectRef    `json:"object"`
	Addresses  []string          `json:"addresses"`
	Placements []PlacementReport `json:"placements"`
	Assessment core.Risk         `json:"risk"`
	// Reasons are the codes of the rules the prediction rests on (docs/reasons.md): after a
	// fix, the ones that say why no loop is expected (node-intercepts-vip, lb-source-nat, ...)
	// name the fix a failing placement contradicts.
	Reasons []string `json:"reasons,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// PlacementReport is one probe Pod: predicted and observed side by side.
type PlacementReport struct {
	Side      Side         `json:"side"`
	Node      string       `json:"node,omitempty"`
	Pod       string       `json:"pod,omitempty"`
	Predicted Prediction   `json:"predicted"`
	Observed  *Observation `json:"observed,omitempty"`
	Agree     bool         `json:"agree"`
	// Why explains a disagreement, or a note on an agreement.
	Why string `json:"why,omitempty"`
	// Probe is the probe's own report (counts and latencies per address).
	Probe *probe.Report `json:"probe,omitempty"`
	// Error says why there is no observation (no such node, the Pod never started).
	Error string `json:"error,omitempty"`
	// Path is the way the model says this placement's connections go, and Mermaid the same
	// as a flowchart.
	Path    Path   `json:"path"`
	Mermaid string `json:"mermaid"`
}

// ErrPodNotStarted: a probe Pod did not start within Options.StartTimeout, or its image
// could not be pulled; the error names the Pod, its node and what its status said.
var ErrPodNotStarted = errors.New("probe Pod did not start")

// Run verifies every target: for each, a probe Pod on a node holding a backend and one on a
// node holding none, at once; it waits for their reports, deletes the Pods (also when ctx
// is cancelled: an interrupt) and compares. It returns an error only for invalid input; what
// went wrong with a Pod is in its PlacementReport.
func Run(ctx context.Context, client kubernetes.Interface, targets []Target, opts *Options) (Report, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return Report{}, err
	}
	for i, t := range targets {
		if t.Service == nil || t.Exposure == nil {
			return Report{}, fmt.Errorf("verify: target %d: Service and Exposure are required", i)
		}
	}
	rep := Report{Exposures: make([]ExposureReport, len(targets))}
	var wg sync.WaitGroup
	slots := make(chan struct{}, o.Parallel)
	for i := range targets {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				rep.Exposures[i] = ExposureReport{Object: targets[i].Exposure.Object, Error: "not verified: " + ctx.Err().Error()}
				return
			}
			rep.Exposures[i] = verifyOne(ctx, client, &targets[i], &o)
		})
	}
	wg.Wait()
	for _, e := range rep.Exposures {
		for _, p := range e.Placements {
			if p.Error != "" {
				rep.Errors++
			}
			switch {
			case p.Observed == nil:
			case p.Agree:
				rep.Agree++
			default:
				rep.Disagree++
			}
		}
		if e.Error != "" {
			rep.Errors++
		}
	}
	return rep, ctx.Err()
}

func (o *Options) validate() error {
	var errs []error
	if o.Image == "" {
		errs = append(errs, errors.New("image: the loopguard image with the probe subcommand is required"))
	}
	spec := probe.Spec{Targets: []string{"x:1"}, Connections: o.Connections, ConnectTimeout: o.ConnectTimeout, ReadTimeout: o.ReadTimeout}
	if err := spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Parallel < 0 {
		errs = append(errs, fmt.Errorf("parallel: %d", o.Parallel))
	}
	if o.StartTimeout < 0 {
		errs = append(errs, fmt.Errorf("startTimeout: %v", o.StartTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("verify: invalid options: %w", err)
	}
	if o.Command == nil {
		o.Command = []string{"/loopguard", "probe"}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	o.Parallel = cmpOr(o.Parallel, 4)
	o.Connections = cmpOr(o.Connections, probe.DefaultConnections)
	o.ConnectTimeout = cmpOr(o.ConnectTimeout, probe.DefaultConnectTimeout)
	o.ReadTimeout = cmpOr(o.ReadTimeout, probe.DefaultReadTimeout)
	if o.Resources == nil {
		o.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}
	}
	return nil
}

// Addresses are the host:port pairs a Service's LB publishes: every status ingress IP and
// hostname with every TCP port.
func Addresses(svc *corev1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		for _, host := range []string{in.IP, in.Hostname} {
			if host == "" {
				continue
			}
			for _, p := range svc.Spec.Ports {
				if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
					out = append(out, net.JoinHostPort(host, strconv.Itoa(int(p.Port))))
				}
			}
		}
	}
	return out
}

// UsableNodes are the names of the nodes a probe Pod pinned with spec.nodeName runs on:
// Ready and not cordoned (the scheduler is bypassed, so nothing else would keep it off a
// node that cannot run it).
func UsableNodes(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

// Nodes picks a node for each side: the first (by name) holding a ready backend, and the
// first holding none; "" where there is none.
func Nodes(e *core.Exposure, nodes []string) (backend, other string) {
	var holding []string
	for _, b := range e.Placement.Backends {
		if b.Count > 0 && slices.Contains(nodes, b.Node) {
			holding = append(holding, b.Node)
		}
	}
	slices.Sort(holding)
	if len(holding) > 0 {
		backend = holding[0]
	}
	sorted := slices.Sorted(slices.Values(nodes))
	for _, n := range sorted {
		if e.Placement.BackendsOn(n) == 0 {
			return backend, n
		}
	}
	return backend, ""
}

func verifyOne(ctx context.Context, client kubernetes.Interface, t *Target, o *Options) ExposureReport {
	svc := t.Service
	a := core.Assess(t.Exposure)
	er := ExposureReport{Object: t.Exposure.Object, Addresses: Addresses(svc), Assessment: a.Risk}
	for _, r := range a.Reasons {
		if !slices.Contains(er.Reasons, string(r.Code)) {
			er.Reasons = append(er.Reasons, string(r.Code))
		}
	}
	if len(er.Addresses) == 0 {
		er.Error = "the Service's status.loadBalancer.ingress has no address with a TCP port: nothing to probe"
		return er
	}
	if len(er.Addresses) > probe.MaxTargets {
		er.Addresses = er.Addresses[:probe.MaxTargets]
	}
	backend, other := Nodes(t.Exposure, t.Nodes)
	sides := []struct {
		side Side
		node string
		none string
	}{
		{BackendNode, backend, "no node a probe Pod may run on holds a ready backend"},
		{OtherNode, other, "every node a probe Pod may run on holds a backend"},
	}
	er.Placements = make([]PlacementReport, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		pr := &er.Placements[i]
		pr.Side, pr.Node = s.side, s.node
		pr.Predicted = Predict(t.Exposure, s.node)
		pr.Path = PathFor(t.Exposure, s.node, backend, er.Addresses[0], pr.Predicted)
		pr.Mermaid = pr.Path.Mermaid()
		if s.node == "" {
			pr.Predicted = Prediction{Behaviour: Unpredicted}
			pr.Error = s.none
			continue
		}
		wg.Go(func() { runPlacement(ctx, client, t, o, er.Addresses, pr) })
	}
	wg.Wait()
	return er
}

func runPlacement(ctx context.Context, client kubernetes.Interface, t *Target, o *Options, addrs []string, pr *PlacementReport) {
	ev := func(pod, phase, detail string) {
		if o.Progress != nil {
			o.Progress(Event{Object: t.Exposure.Object, Side: pr.Side, Node: pr.Node, Pod: pod, Phase: phase, Detail: detail})
		}
	}
	pod := probePod(t.Service, pr.Side, pr.Node, addrs, o)
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		pr.Error = fmt.Sprintf("create probe Pod on node %s: %v", pr.Node, err)
		ev("", "failed", pr.Error)
		return
	}
	pr.Pod = created.Name
	ev(created.Name, "created", "")
	// Removed whatever happens, with a context of its own: an interrupt cancels ctx.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		zero := int64(0)
		err := client.CoreV1().Pods(created.Namespace).Delete(dctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			msg := fmt.Sprintf("could not delete probe Pod %s/%s: %v (kubectl delete pod -n %s -l %s=%s)", created.Namespace, created.Name, err, created.Namespace, LabelManagedBy, ManagedBy)
			pr.Error = strings.TrimPrefix(pr.Error+"; "+msg, "; ")
			ev(created.Name, "failed", msg)
			return
		}
		ev(created.Name, "deleted", "")
	}()
	rep, err := waitReport(ctx, client, created, o, len(addrs), func(phase string) { ev(created.Name, phase, "") })
	if err != nil {
		pr.Error = err.Error()
		ev(created.Name, "failed", pr.Error)
		return
	}
	pr.Probe = rep
	obs := Observe(rep.Targets...)
	pr.Observed = &obs
	pr.Agree, pr.Why = Agree(pr.Predicted, obs)
	ev(created.Name, "done", string(obs.Behaviour))
}

// probeDeadline bounds the probe itself: every connection waiting out both timeouts, plus
// the PROXY check, plus start-up.
func probeDeadline(o *Options, addrs int) time.Duration {
	per := o.ConnectTimeout + o.ReadTimeout
	return time.Duration(addrs*(o.Connections+1))*per + 10*time.Second
}

func probePod(svc *corev1.Service, side Side, node string, addrs []string, o *Options) *corev1.Pod {
	args := slices.Clone(o.Command[1:])
	args = append(args,
		"--connections", strconv.Itoa(o.Connections),
		"--connect-timeout", o.ConnectTimeout.String(),
		"--read-timeout", o.ReadTimeout.String(),
		"--termination-log", "/dev/termination-log")
	if o.NoProxyCheck {
		args = append(args, "--proxy-check=false")
	}
	args = append(args, addrs...)
	deadline := int64(probeDeadline(o, len(addrs))/time.Second) + int64(o.StartTimeout/time.Second)
	no, yes := false, true
	grace := int64(0)
	user := int64(65532) // distroless's nonroot
	name := svc.Name
	if len(name) > 40 {
		name = name[:40]
	}
	labels := map[string]string{}
	for k, v := range o.Labels {
		labels[k] = v
	}
	labels[LabelManagedBy], labels[LabelService], labels[LabelSide] = ManagedBy, truncateLabel(svc.Name), string(side)
	ns, owners := svc.Namespace, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}}
	if o.Namespace != "" && o.Namespace != svc.Namespace {
		ns, owners = o.Namespace, nil
		labels[LabelServiceNamespace] = truncateLabel(svc.Namespace)
		if o.Owner != nil {
			owners = []metav1.OwnerReference{*o.Owner}
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    "loopguard-verify-" + name + "-",
			Namespace:       ns,
			Labels:          labels,
			OwnerReferences: owners,
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &user, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name:                     ContainerName,
				Image:                    o.Image,
				Command:                  o.Command[:1],
				Args:                     args,
				Resources:                *o.Resources,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

func truncateLabel(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}

// waitReport watches the Pod until its container terminates and returns the report the
// probe wrote to its termination message; it fails when the Pod does not start within
// StartTimeout (or its image cannot be pulled), or does not finish within the probe's own
// bound.
func waitReport(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, o *Options, addrs int, phase func(string)) (*probe.Report, error) {
	where := fmt.Sprintf("probe Pod %s/%s on node %s", pod.Namespace, pod.Name, pod.Spec.NodeName)
	startBy := time.Now().Add(o.StartTimeout)
	bound := probeDeadline(o, addrs)
	w, err := client.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: pod.ResourceVersion})
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", where, err)
	}
	defer w.Stop()
	started := false
	timer := time.NewTimer(time.Until(startBy))
	defer timer.Stop()
	last := pod
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", where, ctx.Err())
		case <-timer.C:
			if !started {
				return nil, fmt.Errorf("%w: %s still %s after %v%s (is a kubelet running there, and can it pull %s?)",
					ErrPodNotStarted, where, last.Status.Phase, o.StartTimeout, waitingDetail(last), pod.Spec.Containers[0].Image)
			}
			return nil, fmt.Errorf("%s: no report within %v of starting", where, bound)
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch %s ended early", where)
			}
			switch e.Type {
			case watch.Deleted:
				return nil, fmt.Errorf("%s was deleted before it reported", where)
			case watch.Error:
				return nil, fmt.Errorf("watch %s: %v", where, apierrors.FromObject(e.Object))
			}
			p, ok := e.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			last = p
			if reason, bad := imageFailure(p); bad {
				return nil, fmt.Errorf("%w: %s: %s", ErrPodNotStarted, where, reason)
			}
			if !started && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
				started = true
				phase("running")
				timer.Reset(bound)
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name != ContainerName || cs.State.Terminated == nil {
					continue
				}
				term := cs.State.Terminated
				var rep probe.Report
				if err := json.Unmarshal([]byte(term.Message), &rep); err != nil || len(rep.Targets) == 0 {
					return nil, fmt.Errorf("%s: the probe exited with code %d (%s) without a report: %q", where, term.ExitCode, term.Reason, truncate(term.Message, 300))
				}
				return &rep, nil
			}
			if p.Status.Phase == corev1.PodFailed {
				return nil, fmt.Errorf("%s failed: %s %s", where, p.Status.Reason, p.Status.Message)
			}
		}
	}
}

// imageFailure is a container waiting for a reason that will not fix itself within a run.
func imageFailure(p *corev1.Pod) (string, bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message), true
			}
		}
	}
	return "", false
}

func waitingDetail(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return fmt.Sprintf(" (container %s waiting: %s %s)", cs.Name, w.Reason, w.Message)
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
