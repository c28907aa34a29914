package tencent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// Listener attributes a direct-mode change writes with ModifyListener (docs/sources.md#tke-clb-api).
const (
	attrSnatEnable      = "SnatEnable"
	attrKeepaliveEnable = "KeepaliveEnable"
)

// AttrFlagSnatEnable is the DescribeListeners AttrFlags entry of a listener with SNAT on: the
// Listener model has no SnatEnable field (docs/sources.md#tke-clb-api; terraform-provider-tencentcloud
// resource_tc_clb_listener.go reads it the same way).
const AttrFlagSnatEnable = "SnatEnable"

// Keys of a direct-mode core.Change's Params.
const (
	ParamLoadBalancerID = "loadBalancerId"
	ParamListenerID     = "listenerId"
	ParamProtocol       = "protocol"
	ParamPort           = "port"
	// ParamAttribute is "SnatEnable" or "KeepaliveEnable"; ParamValue "true" or "1".
	ParamAttribute = "attribute"
	ParamValue     = "value"
	// ParamCapabilities lists the allowlists the write needs, comma-separated.
	ParamCapabilities = "capabilities"
	// ParamKind, ParamNamespace and ParamName name the Kubernetes object the change is for.
	ParamKind      = "kind"
	ParamNamespace = "namespace"
	ParamName      = "name"
)

// LoadBalancerIDOf returns the CLB a Service or Ingress uses, from the annotation TKE's
// controller sets (service.kubernetes.io/loadbalance-id, kubernetes.io/ingress.qcloud-loadbalance-id)
// or, before it does, the reused CLB the object names (tke-existed-lbid, ingress.existLbId);
// "" when neither is set (457/51258, 457/56112).
func LoadBalancerIDOf(obj runtime.Object) (string, error) {
	var ann map[string]string
	var keys [2]string
	switch o := obj.(type) {
	case *corev1.Service:
		ann, keys = o.Annotations, [2]string{AnnotationLoadBalancerID, AnnotationExistedLB}
	case *networkingv1.Ingress:
		ann, keys = o.Annotations, [2]string{AnnotationIngressLoadBalancerID, AnnotationIngressExistLB}
	default:
		return "", &core.KindError{Kind: core.ErrUnsupported, Msg: fmt.Sprintf("no CLB for %T", obj)}
	}
	for _, k := range keys {
		if v := strings.TrimSpace(ann[k]); v != "" {
			return v, nil
		}
	}
	return "", nil
}

// listenerWrite is one direct-mode change: one attribute of one listener.
type listenerWrite struct {
	lbID, listenerID string
	protocol         string
	port             int64
	attribute        string
	// off: the write turns the attribute off again (a removal).
	off    bool
	caps   []core.Capability
	object core.ObjectRef
}

func (w *listenerWrite) target() string {
	return w.lbID + " listener " + w.listenerID + " (" + w.protocol + ":" + strconv.FormatInt(w.port, 10) + ")"
}

func (w *listenerWrite) value() string {
	switch {
	case w.attribute == attrKeepaliveEnable && w.off:
		return "0"
	case w.attribute == attrKeepaliveEnable:
		return "1"
	case w.off:
		return "false"
	}
	return "true"
}

// capability is the allowlist the written attribute itself needs, named when the cloud refuses.
func (w *listenerWrite) capability() core.Capability {
	switch {
	case w.attribute == attrKeepaliveEnable:
		return CapKeepalive
	case w.protocol == "HTTP" || w.protocol == "HTTPS":
		return CapL7SNAT
	}
	return CapL4SNAT
}

// satisfied reports whether a listener read back has the attribute as the write wants it.
func (w *listenerWrite) satisfied(l *clb.Listener) bool {
	return w.on(l) != w.off
}

// on reports whether a listener has the attribute on.
func (w *listenerWrite) on(l *clb.Listener) bool {
	if w.attribute == attrKeepaliveEnable {
		return l.KeepaliveEnable != nil && *l.KeepaliveEnable == 1
	}
	return snatOn(l)
}

func snatOn(l *clb.Listener) bool {
	return slices.Contains(common.StringValues(l.AttrFlags), AttrFlagSnatEnable)
}

func (w *listenerWrite) current(l *clb.Listener) string {
	if w.attribute == attrKeepaliveEnable {
		if l.KeepaliveEnable == nil {
			return "0"
		}
		return strconv.FormatInt(*l.KeepaliveEnable, 10)
	}
	return strconv.FormatBool(snatOn(l))
}

func (w *listenerWrite) params() map[string]string {
	caps := make([]string, len(w.caps))
	for i, c := range w.caps {
		caps[i] = string(c)
	}
	return map[string]string{
		ParamLoadBalancerID: w.lbID, ParamListenerID: w.listenerID,
		ParamProtocol: w.protocol, ParamPort: strconv.FormatInt(w.port, 10),
		ParamAttribute: w.attribute, ParamValue: w.value(),
		ParamCapabilities: strings.Join(caps, ","),
		ParamKind:         w.object.Kind, ParamNamespace: w.object.Namespace, ParamName: w.object.Name,
	}
}

// neededBy lists the allowlists a write needs: none to turn an attribute off.
func neededBy(w *listenerWrite) []core.Capability {
	if w.off {
		return nil
	}
	return w.caps
}

// parseWrite reads a change made by planDirect.
func parseWrite(ch *core.Change) (*listenerWrite, error) {
	p := ch.Params
	w := &listenerWrite{lbID: p[ParamLoadBalancerID], listenerID: p[ParamListenerID], protocol: p[ParamProtocol], attribute: p[ParamAttribute],
		object: core.ObjectRef{Kind: p[ParamKind], Namespace: p[ParamNamespace], Name: p[ParamName]}}
	port, err := strconv.ParseInt(p[ParamPort], 10, 64)
	on := w.value()
	w.off = true
	off := w.value()
	w.off = p[ParamValue] == off
	switch {
	case w.lbID == "" || w.listenerID == "":
		err = errors.New("needs " + ParamLoadBalancerID + " and " + ParamListenerID)
	case err != nil:
		err = errors.New(ParamPort + " is not a number")
	case w.attribute != attrSnatEnable && w.attribute != attrKeepaliveEnable:
		err = fmt.Errorf("%s %q: want %s or %s", ParamAttribute, w.attribute, attrSnatEnable, attrKeepaliveEnable)
	case p[ParamValue] != on && p[ParamValue] != off:
		err = fmt.Errorf("%s %q: the driver turns %s on (%s) or, removing, off (%s)", ParamValue, p[ParamValue], w.attribute, on, off)
	}
	if err != nil {
		return nil, &core.KindError{Kind: core.ErrInvalid, Object: w.object, Msg: "not a change the Tencent driver planned: " + ch.String(), Err: err}
	}
	w.port = port
	for _, c := range strings.Split(p[ParamCapabilities], ",") {
		if c != "" {
			w.caps = append(w.caps, core.Capability(c))
		}
	}
	return w, nil
}

// directService plans layer-4 SNAT on the Service's CLB listeners through the CLB API.
func (pr *planning) directService(ctx context.Context, svc *corev1.Service) error {
	listeners, ok := pr.l4Listeners(svc)
	if !ok {
		return nil
	}
	pr.noteSourceAddress(listeners)
	return pr.planDirect(ctx, listeners, attrSnatEnable, []core.Capability{CapL4SNAT}, ruleOfferL4SNAT.Reason())
}

// directIngress plans layer-7 SNAT on the Ingress's CLB listeners through the CLB API, with
// the attribute the ingress controller's version calls for (the same rule as the
// TkeServiceConfig field: SnatEnable from v2.9.0, KeepaliveEnable before).
func (pr *planning) directIngress(ctx context.Context, ing *networkingv1.Ingress) error {
	listeners, ok := pr.l7Listeners(ing)
	if !ok {
		return nil
	}
	attr, ok := pr.l7Attribute()
	if !ok {
		return nil
	}
	pr.noteLayer7()
	a := attrSnatEnable
	if attr.keepalive {
		a = attrKeepaliveEnable
	}
	return pr.planDirect(ctx, listeners, a, attr.capabilities(), ruleOfferL7SNAT.Reason())
}

// directRetry is how long to wait for TKE's controller to create the CLB or its listeners.
const directRetry = 15 * time.Second

// planDirect reads all listeners of the object's CLB in one DescribeListeners call and plans a
// ModifyListener for each of the object's listeners that lacks the attribute.
func (pr *planning) planDirect(ctx context.Context, keys []ListenerKey, attribute string, caps []core.Capability, reason core.Reason) error {
	pr.ensureNotes(ruleDirectCLB.Reason())
	return pr.directWrites(ctx, keys, attribute, caps, reason, false)
}

// directWrites plans one ModifyListener for each of the object's listeners whose attribute is
// not as wanted: on, or (off, for a removal) off again.
func (pr *planning) directWrites(ctx context.Context, keys []ListenerKey, attribute string, caps []core.Capability, reason core.Reason, off bool) error {
	obj, err := pr.liveObject(ctx)
	if err != nil {
		return err
	}
	lbID, err := pr.d.lbID(obj)
	if err != nil {
		return err
	}
	if lbID == "" && off {
		return nil // no CLB: nothing of loopguard's on it
	}
	if lbID == "" {
		pr.block(&core.RetryError{After: directRetry, Msg: pr.plan.Object.String() + " has no CLB yet (no " + AnnotationLoadBalancerID + " or " + AnnotationIngressLoadBalancerID + " annotation)"})
		return nil
	}
	all, err := pr.d.clb.describeListeners(ctx, lbID, nil)
	if err != nil {
		return err
	}
	byKey := make(map[ListenerKey]*clb.Listener, len(all))
	for _, l := range all {
		if l == nil || l.Protocol == nil || l.Port == nil || l.ListenerId == nil {
			continue
		}
		byKey[ListenerKey{Protocol: strings.ToUpper(*l.Protocol), Port: int32(*l.Port)}] = l
	}
	var missing []string
	for _, k := range keys {
		l := byKey[k]
		if l == nil {
			missing = append(missing, k.String())
			continue
		}
		w := &listenerWrite{lbID: lbID, listenerID: *l.ListenerId, protocol: k.Protocol, port: int64(k.Port), attribute: attribute, off: off, caps: caps, object: pr.plan.Object}
		if w.satisfied(l) {
			continue
		}
		pr.plan.Changes = append(pr.plan.Changes, core.Change{
			By:       core.WriterCloud,
			Resource: "clb " + w.target(),
			Field:    attribute,
			From:     w.current(l),
			To:       w.value(),
			Params:   w.params(),
			Needs:    neededBy(w),
			Reason:   reason,
		})
	}
	if off {
		return nil // listeners gone are nothing to take back; turning off needs no allowlist
	}
	if len(missing) > 0 {
		pr.block(&core.RetryError{After: directRetry, Msg: fmt.Sprintf("%s: CLB %s has no listener for %s yet", pr.plan.Object, lbID, strings.Join(missing, ", "))})
	}
	pr.checkAllowlists(caps)
	return nil
}

// liveObject returns the object with its live annotations: TKE's controller records the CLB
// it created in an annotation after the host may have read the object.
func (pr *planning) liveObject(ctx context.Context) (runtime.Object, error) {
	key, ok := core.KeyOf(pr.req.Object)
	if !ok || pr.req.Reader == nil {
		return pr.req.Object, nil
	}
	switch o := pr.req.Object.(type) {
	case *corev1.Service:
		ann, err := pr.liveAnnotations(ctx, key, o.Annotations)
		if err != nil {
			return nil, err
		}
		c := *o
		c.Annotations = ann
		return &c, nil
	case *networkingv1.Ingress:
		ann, err := pr.liveAnnotations(ctx, key, o.Annotations)
		if err != nil {
			return nil, err
		}
		c := *o
		c.Annotations = ann
		return &c, nil
	}
	return pr.req.Object, nil
}

// ApplyCloud makes one direct-mode change: it reads the listener (already on is success with
// nothing written), checks once per driver that the credentials may call DescribeTaskStatus
// (so a missing CAM permission stops it before the first write), writes the attribute with
// ModifyListener, waits for the write's task with
// DescribeTaskStatus, and reads the listener back. A refusal by the cloud (docs/sources.md#tke-clb-api) is a
// *core.AllowlistError wrapping the cloud's error (a Reconciler with a core.CapabilityCache
// remembers it). A busy or throttling CLB is retried with backoff and, past the budget, is a
// core.RetryError; so is a task still running after DriverOptions.TaskTimeout. Concurrent
// calls for listeners of one CLB take turns (CLB runs one task per load balancer at a time);
// calls for different CLBs run at once, within the per-action rate limits.
func (d *Driver) ApplyCloud(ctx context.Context, ch *core.Change) (core.ApplyResult, error) {
	none := core.ApplyResult{}
	if ch == nil || ch.By != core.WriterCloud {
		return none, &core.KindError{Kind: core.ErrInvalid, Msg: "ApplyCloud takes cloud changes only"}
	}
	if d.clb == nil {
		return none, &core.KindError{Kind: core.ErrUnsupported, Msg: "the driver has no CLB client (DriverOptions.CLB): " + ch.String()}
	}
	w, err := parseWrite(ch)
	if err != nil {
		return none, err
	}
	log := d.log.With("loadBalancerId", w.lbID, "listenerId", w.listenerID, "attribute", w.attribute)

	// One write of this driver at a time per CLB, from the read that decides it to the end of
	// its task: the read then sees what the write before it did.
	unlock, err := d.clb.lockLB(ctx, w.lbID)
	if err != nil {
		return none, err
	}
	wrote, taskID, err := d.writeListener(ctx, w, log)
	unlock()
	if err != nil || !wrote.Wrote {
		return wrote, err
	}
	// The task says done; only the listener says whether it took (docs/sources.md#tke-clb-api).
	l, err := d.readListener(ctx, w)
	if err != nil {
		return wrote, err
	}
	if !w.satisfied(l) {
		return wrote, &core.KindError{Kind: core.ErrConflict, Object: w.object, Msg: fmt.Sprintf(
			"clb %s: %s is still %s after task %s succeeded (is the account allowlisted for %q? does another controller revert it?)",
			w.target(), w.attribute, w.current(l), taskID, Ask(w.capability()))}
	}
	log.Info("listener verified", "task", taskID)
	return wrote, nil
}

// writeListener reads the listener and, unless it is already as wanted, writes it and waits
// for the write's task.
func (d *Driver) writeListener(ctx context.Context, w *listenerWrite, log hclog.Logger) (core.ApplyResult, string, error) {
	none := core.ApplyResult{}
	l, err := d.readListener(ctx, w)
	if err != nil {
		return none, "", err
	}
	if w.satisfied(l) {
		log.Debug("listener already set")
		return none, "", nil
	}
	if err := d.clb.checkTaskReadable(ctx, w.target()); err != nil {
		return none, "", err
	}
	taskID, already, err := d.clb.modifyListener(ctx, w, func(ctx context.Context) (bool, error) {
		l, err := d.readListener(ctx, w)
		return err == nil && w.satisfied(l), err
	})
	if err != nil {
		if classify(err) == failNotEnabled {
			return none, "", NewAllowlistError(w.object, w.capability(), err)
		}
		return none, "", err
	}
	wrote := core.ApplyResult{Wrote: true}
	if already {
		// An attempt whose answer was lost took; its task has succeeded (the listener shows it).
		log.Info("listener write took, its answer was lost")
		return wrote, "", nil
	}
	log.Info("listener write accepted", "task", taskID)
	if err := d.clb.waitTask(ctx, taskID, w.target()); err != nil {
		var te *TaskError
		if errors.As(err, &te) && mentionsAllowlist(te.Message) {
			return wrote, taskID, NewAllowlistError(w.object, w.capability(), te)
		}
		return wrote, taskID, err
	}
	return wrote, taskID, nil
}

// readListener reads one listener by ID.
func (d *Driver) readListener(ctx context.Context, w *listenerWrite) (*clb.Listener, error) {
	ls, err := d.clb.describeListeners(ctx, w.lbID, []string{w.listenerID})
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if l != nil && l.ListenerId != nil && *l.ListenerId == w.listenerID {
			return l, nil
		}
	}
	return nil, &core.KindError{Kind: core.ErrConflict, Object: w.object, Msg: "clb " + w.target() + " no longer exists; plan again"}
}
