package tencent

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
)

// Name is the provider name used in profiles and output.
const Name = "tencent"

// Options tune the Tencent dialect. The zero value (or nil) uses the documented defaults.
type Options struct {
	// PreventLoopbackMinimums adds to or replaces entries of DefaultPreventLoopbackMinimums,
	// keyed by minor ("1.22": "v1.22.5-tke.3"); an empty value removes a minor. The guide
	// treats this table as data the user can correct (docs/sources.md#tke-fixes).
	PreventLoopbackMinimums map[string]string
	// StrictRevisions makes a kube-proxy minor with no entry "unknown" instead of assuming
	// that minors newer than the newest entry support prevent-loopback (UNCONFIRMED, see
	// unconfirmed.go).
	StrictRevisions bool
	// NodeKind classifies a node; nil, or an empty result, uses the documented labels
	// (super: node.kubernetes.io/instance-type=eklet; native: node.tke.cloud.tencent.com/
	// machineset or machine; anything else regular, UNCONFIRMED).
	NodeKind func(*corev1.Node) NodeKind
	// CLBs are facts read from the CLB API beforehand (Driver.ReadCLBs): the type of a CLB an
	// object reuses, which sets its scope (OPEN public, INTERNAL private). Nil, or a CLB not
	// in it, leaves a reused CLB's scope unknown unless loopguard.io/lb-scope says.
	CLBs CLBLookup
}

// Validate checks the options; NewDialect keeps an invalid configuration and Translate
// returns this error (matching core.ErrInvalid) for every object.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	_, err := newRevisionTable(o.PreventLoopbackMinimums, o.StrictRevisions)
	if err != nil {
		return fmt.Errorf("tencent.Options: %w: %v", core.ErrInvalid, err)
	}
	return nil
}

// Dialect is the TKE + CLB dialect: it reads Services and Ingresses (annotations, node labels,
// kube-proxy mode and revision, controller versions, TkeServiceConfig) into the portable model,
// and lists the remedies TKE can carry out. It reads only; it is safe for concurrent use.
type Dialect struct {
	opts      Options
	revisions revisionTable
	optErr    error
}

var _ core.Dialect = (*Dialect)(nil)

// NewDialect returns the Tencent dialect. opts may be nil.
func NewDialect(opts *Options) *Dialect {
	d := &Dialect{}
	if opts != nil {
		d.opts = *opts
	}
	d.revisions, d.optErr = newRevisionTable(d.opts.PreventLoopbackMinimums, d.opts.StrictRevisions)
	if d.optErr != nil {
		d.optErr = fmt.Errorf("tencent.Options: %w: %v", core.ErrInvalid, d.optErr)
		d.revisions, _ = newRevisionTable(nil, d.opts.StrictRevisions)
	}
	return d
}

// Name returns "tencent".
func (d *Dialect) Name() string { return Name }

// Rules lists the dialect's documented rules, each with its source.
func (d *Dialect) Rules() []core.Rule { return append([]core.Rule(nil), rules...) }

// Translate reads a *corev1.Service (type LoadBalancer) or a *networkingv1.Ingress (class
// qcloud or none) into an exposure and the remedies TKE offers for it. Other objects, other
// Service types and other ingress classes return an error matching core.ErrNotExposed; bad
// annotations or a malformed referenced TkeServiceConfig return a *core.InvalidError naming the
// fields (nothing partial is returned). loopguard.io annotations are applied last and win.
func (d *Dialect) Translate(obj runtime.Object, c *core.Cluster) (*core.Result, error) {
	if d.optErr != nil {
		return nil, d.optErr
	}
	if c == nil {
		return nil, fmt.Errorf("tencent: %w: nil cluster", core.ErrInvalid)
	}
	switch o := obj.(type) {
	case *corev1.Service:
		if o != nil {
			return d.translateService(o, c)
		}
	case *networkingv1.Ingress:
		if o != nil {
			return d.translateIngress(o, c)
		}
	}
	kind := "nil"
	if obj != nil {
		kind = fmt.Sprintf("%T", obj)
		if v := reflect.ValueOf(obj); v.Kind() != reflect.Pointer || !v.IsNil() {
			if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
				kind = k
			}
		}
	}
	return nil, &core.KindError{Kind: core.ErrNotExposed, Object: core.ObjectRef{Kind: kind},
		Msg: "the Tencent dialect reads Services and Ingresses only"}
}
