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
	// and an *InvalidError naming the field for bad annotations. It fills the Result's
	// Exposure and Offers (the remedies this cloud can carry out for the object); Evaluate
	// adds the Assessment and the Decision to the same Result.
	Translate(obj runtime.Object, c *Cluster) (*Result, error)
	// Rules lists the dialect's documented rules (for docs/reasons.md).
	Rules() []Rule
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
	r, err := d.Translate(obj, c)
	if err != nil {
		return nil, err
	}
	r.Assessment = Assess(&r.Exposure)
	r.Decision = Decide(&r.Assessment, r.Offers, p)
	return r, nil
}
