package core

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Writer says who carries out a change.
type Writer string

const (
	// WriterCluster: the reconciler writes a Kubernetes object through the ClusterWriter.
	WriterCluster Writer = "cluster"
	// WriterCloud: the provider's driver calls the cloud API.
	WriterCloud Writer = "cloud"
	// WriterStatus: the host that owns the Service's status writes it: a
	// cloud-controller-manager returns it in the LoadBalancerStatus of EnsureLoadBalancer
	// (status.loadBalancer.ingress[].ipMode, KEP-1860). The Reconciler hands these changes
	// back in Outcome.ForStatus.
	WriterStatus Writer = "status"
	// WriterUser: loopguard does not write it; the plan shows what the user should apply
	// (a scheduling rule on their workloads, a support ticket, a DNS change).
	WriterUser Writer = "user"
)

// ObjectKey names a Kubernetes object to read or write.
type ObjectKey struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// Strategy says how a cluster change is written.
type Strategy string

const (
	// StrategyApply: server-side apply of just the edited fields under loopguard's field
	// manager; the API server keeps every field other managers own and reports a conflict when
	// another manager owns one of ours. Used for annotations.
	StrategyApply Strategy = "apply"
	// StrategyUpdate: read, make the edits, write back with the resourceVersion read
	// (optimistic concurrency). Used for objects whose lists the server cannot merge by key
	// (a CRD schema without list-map markers, like TKE's TkeServiceConfig): the edits touch
	// only their own leaves, so every other field survives the round trip.
	StrategyUpdate Strategy = "update"
)

// Change is one concrete change of a plan.
type Change struct {
	By Writer `json:"by"`
	// Object is the Kubernetes object a cluster change writes.
	Object *ObjectKey `json:"object,omitempty"`
	// Resource names the cloud resource a cloud change writes ("clb listener lbl-123 of lb-abc").
	Resource string `json:"resource,omitempty"`
	// Field and To describe the change for people; From is the observed value ("" when absent).
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Edits are what a cluster change does to the object.
	Edits    []Edit   `json:"edits,omitempty"`
	Strategy Strategy `json:"strategy,omitempty"`
	// Create makes the object from Template (plus Edits) when it does not exist yet.
	Create   bool                       `json:"create,omitempty"`
	Template *unstructured.Unstructured `json:"template,omitempty"`
	// Params carry a cloud change's arguments for the driver (IDs, attribute names).
	Params map[string]string `json:"params,omitempty"`
	// Delete: the object is deleted. A cluster change deletes it in a removal, and is planned
	// only for objects loopguard created; a user change asks the user to delete it (VKE's old
	// Service, once its clients moved to the replacement).
	Delete bool `json:"delete,omitempty"`
	// Needs lists the allowlisted capabilities the change needs; a Reconciler with a
	// CapabilityCache blocks it while the cloud is known to refuse one.
	Needs []Capability `json:"needs,omitempty"`
	// Disruptive: the change replaces an object (a new LB address).
	Disruptive bool `json:"disruptive,omitempty"`
	// CreateOnly (with Create): the edits only take effect when the object is created, like an
	// annotation a controller reads once (VKE's ip-mode). When the object already exists the
	// change is done if every edit already holds, and refused with ErrImmutable otherwise; it
	// never edits a live object. On a user change it says the edits cannot be made on the
	// live object (a bare Pod's scheduling fields, a Job's template): they go where the object
	// is defined and take effect when it is created again.
	CreateOnly bool `json:"createOnly,omitempty"`
	// Reason says why the change is part of the plan.
	Reason Reason `json:"reason"`
}

func (c *Change) String() string {
	target := c.Resource
	if c.Object != nil {
		target = c.Object.String()
	}
	from := c.From
	if from == "" {
		from = "(unset)"
	}
	return fmt.Sprintf("%s %s: %s %s → %s", c.By, target, c.Field, from, c.To)
}

// Check is something the reconciler re-reads after applying to confirm the change took
// effect, such as status.loadBalancer.ingress[].ipMode set by a cloud controller.
type Check struct {
	Object ObjectKey `json:"object"`
	Edit   Edit      `json:"expect"`
	// Each, when set, is the path of a list in the object: the check then holds when the list
	// has at least one element and Edit, read relative to each element, holds on every one
	// (status.loadBalancer.ingress[*].ipMode).
	Each []PathElem `json:"each,omitempty"`
	// Pending says what it means when the check does not hold yet, and what to do next.
	Pending string `json:"pending"`
}

// Holds reports whether the check holds on a live object.
func (c *Check) Holds(obj map[string]any) bool {
	if c.Each == nil {
		return c.Edit.Satisfied(obj)
	}
	v, _ := Edit{Path: c.Each}.Current(obj)
	list, _ := v.([]any)
	if len(list) == 0 {
		return false
	}
	for _, el := range list {
		m, ok := el.(map[string]any)
		if !ok || !c.Edit.Satisfied(m) {
			return false
		}
	}
	return true
}

// What renders the checked field: status.loadBalancer.ingress[*].ipMode.
func (c *Check) What() string {
	if c.Each == nil {
		return c.Edit.String()
	}
	return Edit{Path: c.Each}.String() + "[*]." + c.Edit.String()
}

// Plan is everything needed to make a decision true for one object. Computing it never
// writes; it is validated whole before the first write.
type Plan struct {
	Object   ObjectRef `json:"object"`
	Decision Decision  `json:"decision"`
	Changes  []Change  `json:"changes"`
	Checks   []Check   `json:"checks,omitempty"`
	// Notes are consequences worth reading before applying (health checks move to 100.64,
	// existing long connections keep the old path).
	Notes []Reason `json:"notes,omitempty"`
	// Blocked is set when the plan cannot be applied as is (an allowlist to request, an
	// unknown version); Blocked.Err() is the error Apply returns.
	Blocked *Blocker `json:"blocked,omitempty"`
	// Removal: the plan takes back what loopguard set (Reconciler.Remove).
	Removal bool `json:"removal,omitempty"`
}

// Block sets the plan's Blocker from err unless one is set already; a nil err does nothing.
func (p *Plan) Block(err error) {
	if p.Blocked == nil && err != nil {
		p.Blocked = BlockerOf(err)
	}
}

// Empty reports whether the plan writes nothing: the decision is already true.
func (p *Plan) Empty() bool {
	for i := range p.Changes {
		if p.Changes[i].By != WriterUser {
			return false
		}
	}
	return true
}

func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", p.Object, p.Decision.Remedy)
	for i := range p.Changes {
		b.WriteString("\n  ")
		b.WriteString(p.Changes[i].String())
	}
	return b.String()
}

// ClusterReader reads live Kubernetes objects as unstructured, so no field is lost on the way.
type ClusterReader interface {
	// Get returns the object, or (nil, nil) when it does not exist.
	Get(ctx context.Context, key ObjectKey) (*unstructured.Unstructured, error)
}

// ClusterWriter writes Kubernetes objects under loopguard's field manager. Adapters implement
// it with client-go (adapters/kube); tests can use a fake.
type ClusterWriter interface {
	ClusterReader
	// Apply server-side-applies a partial object. A field owned by another manager is a
	// conflict (ErrConflict), never forced.
	Apply(ctx context.Context, obj *unstructured.Unstructured) error
	// Update writes an object read by Get; ErrConflict when it changed since.
	Update(ctx context.Context, obj *unstructured.Unstructured) error
	// Create creates an object; ErrConflict when it already exists.
	Create(ctx context.Context, obj *unstructured.Unstructured) error
	// Delete deletes an object read by Get, if it still has the resourceVersion read
	// (ErrConflict otherwise); an object already gone is success.
	Delete(ctx context.Context, obj *unstructured.Unstructured) error
}

// PlanRequest is what a Driver plans from.
type PlanRequest struct {
	Object  runtime.Object
	Cluster *Cluster
	Result  *Result
	Policy  Policy
	// Reader reads live objects; nil when planning offline from manifests, where the input
	// objects are the observed state.
	Reader ClusterReader
}
