package core

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// Dialect translates one cloud's objects into the portable model. It reads only: annotations,
// labels, versions, cloud state already gathered into the Cluster. It knows nothing about
// physics; Assess does.
type Dialect interface {
	// Name is the provider name used in profiles and output ("tencent").
	Name() string
	// Translate reads one *corev1.Service or *networkingv1.Ingress. It returns an error
	// matching ErrNotExposed for objects that are not load-balancer exposures of this cloud,
	// and an *InvalidError naming the field for bad annotations.
	Translate(obj runtime.Object, c *Cluster) (*Translation, error)
	// Rules lists the dialect's documented rules (for docs/reasons.md).
	Rules() []Rule
}

// Translation is a dialect's view of one object: the exposure and the remedies this cloud can
// carry out for it.
type Translation struct {
	Exposure Exposure
	Offers   []Offer
}

// Result is the whole evaluation of one object.
type Result struct {
	Exposure   Exposure
	Assessment Assessment
	Offers     []Offer
	Decision   Decision
}

// Evaluate translates, assesses and decides one object under the policy.
func Evaluate(d Dialect, obj runtime.Object, c *Cluster, p Policy) (*Result, error) {
	t, err := d.Translate(obj, c)
	if err != nil {
		return nil, err
	}
	r := &Result{Exposure: t.Exposure, Offers: t.Offers}
	r.Assessment = Assess(&r.Exposure)
	r.Decision = Decide(&r.Assessment, r.Offers, p)
	return r, nil
}
