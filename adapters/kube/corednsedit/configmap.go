package corednsedit

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loopguard/loopguard/core"
)

// Options name the ConfigMap and its key; nil means kube-system/coredns, key Corefile (kubeadm's
// names, and most distributions').
type Options struct {
	Namespace, Name, Key string
	// ClusterDomain is the Services' DNS domain (default cluster.local).
	ClusterDomain string
}

func (o *Options) orDefault() Options {
	d := Options{Namespace: "kube-system", Name: "coredns", Key: "Corefile", ClusterDomain: "cluster.local"}
	if o == nil {
		return d
	}
	if o.Namespace != "" {
		d.Namespace = o.Namespace
	}
	if o.Name != "" {
		d.Name = o.Name
	}
	if o.Key != "" {
		d.Key = o.Key
	}
	if o.ClusterDomain != "" {
		d.ClusterDomain = o.ClusterDomain
	}
	return d
}

// Owner names the owner of a Service's rules: "Service <namespace>/<name>".
func Owner(svc *corev1.Service) string { return "Service " + svc.Namespace + "/" + svc.Name }

// RewritesFor are the rules that carry out dns-steering for svc: every hostname its load
// balancer publishes (status.loadBalancer.ingress[].hostname) answered with the Service's
// cluster name, the target core/dialect's DNSSteeringOffer names. An address-only load
// balancer has no name to steer: its clients must use the Service's name themselves.
func RewritesFor(svc *corev1.Service, opts *Options) ([]Rewrite, error) {
	o := opts.orDefault()
	target := svc.Name + "." + svc.Namespace + ".svc." + o.ClusterDomain
	var rs []Rewrite
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.Hostname != "" {
			rs = append(rs, Rewrite{Name: in.Hostname, Target: target})
		}
	}
	if len(rs) == 0 {
		return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: fmt.Sprintf("Service %s/%s: status.loadBalancer.ingress has no hostname: DNS cannot steer clients that dial an address; point them at %s", svc.Namespace, svc.Name, target)}
	}
	return rs, nil
}

// managedConfigMap says why another tool reconciles the ConfigMap (wrapping ErrManaged), or nil.
func managedConfigMap(cm *corev1.ConfigMap) error {
	// kube-addon-manager (GKE, kube-up) puts back whatever it finds changed in Reconcile mode.
	if m := cm.Labels["addonmanager.kubernetes.io/mode"]; m == "Reconcile" {
		return fmt.Errorf("%w: ConfigMap %s/%s is labelled addonmanager.kubernetes.io/mode=Reconcile: the addon manager would put the Corefile back", ErrManaged, cm.Namespace, cm.Name)
	}
	if m := cm.Labels["app.kubernetes.io/managed-by"]; m != "" {
		return fmt.Errorf("%w: ConfigMap %s/%s is labelled app.kubernetes.io/managed-by=%s: change the Corefile there", ErrManaged, cm.Namespace, cm.Name, m)
	}
	return nil
}

// Steer adds owner's rewrites to the Corefile and reports whether it wrote. Unsteer takes them
// back. Both read the ConfigMap, edit only the Corefile's text and update with the
// resourceVersion read (every other key, label and annotation as it was), retrying a conflict
// on a fresh read. A managed Corefile or ConfigMap is refused with ErrManaged, unwritten.
func Steer(ctx context.Context, kube kubernetes.Interface, owner string, rewrites []Rewrite, opts *Options) (bool, error) {
	return update(ctx, kube, opts, func(corefile string) (string, error) { return Edit(corefile, owner, rewrites) })
}

// Unsteer takes owner's rewrites back out of the Corefile (see Steer).
func Unsteer(ctx context.Context, kube kubernetes.Interface, owner string, opts *Options) (bool, error) {
	return update(ctx, kube, opts, func(corefile string) (string, error) { return TakeBack(corefile, owner) })
}

func update(ctx context.Context, kube kubernetes.Interface, opts *Options, edit func(string) (string, error)) (bool, error) {
	o := opts.orDefault()
	for attempt := 0; ; attempt++ {
		cm, err := kube.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("corednsedit: read ConfigMap %s/%s: %w", o.Namespace, o.Name, err)
		}
		corefile, ok := cm.Data[o.Key]
		if !ok {
			return false, fmt.Errorf("corednsedit: ConfigMap %s/%s has no key %s", o.Namespace, o.Name, o.Key)
		}
		if err := managedConfigMap(cm); err != nil {
			return false, err
		}
		edited, err := edit(corefile)
		if err != nil {
			return false, fmt.Errorf("ConfigMap %s/%s, key %s: %w", o.Namespace, o.Name, o.Key, err)
		}
		if edited == corefile {
			return false, nil
		}
		cm.Data[o.Key] = edited
		_, err = kube.CoreV1().ConfigMaps(o.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: core.FieldManager})
		if apierrors.IsConflict(err) && attempt < 4 {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("corednsedit: update ConfigMap %s/%s: %w", o.Namespace, o.Name, err)
		}
		return true, nil
	}
}

// IsSteering says whether a change of a plan is dns-steering for the user to carry out, the
// change the hook carries out with Steer.
func IsSteering(ch core.Change) bool {
	return ch.By == core.WriterUser && strings.EqualFold(ch.Field, string(core.DNSSteering))
}
