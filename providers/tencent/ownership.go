package tencent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	netutils "k8s.io/utils/net"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// CLBDescriber is the CLB API call the ownership check needs on top of CLBAPI; *clb.Client
// has it. It is a separate interface so that CLBAPI does not grow.
type CLBDescriber interface {
	DescribeLoadBalancersWithContext(ctx context.Context, req *clb.DescribeLoadBalancersRequest) (*clb.DescribeLoadBalancersResponse, error)
}

var _ CLBDescriber = (*clb.Client)(nil)

var _ dialect.OwnershipChecker = (*Driver)(nil)

// CheckOwnership implements dialect.OwnershipChecker for ModeDirect: a listener write goes only
// to a CLB one of whose VIPs is in the object's status.loadBalancer.ingress, the address TKE's
// controller (or a CCM fork) published for it. The CLB a direct-mode change writes is read from
// an annotation (service.kubernetes.io/loadbalance-id, tke-existed-lbid), which whoever may
// edit the Service can point at another Service's CLB; a host with account-wide CLB rights
// (adapters/cloudprovider builds its Reconciler with ReconcilerOptions.OwnershipCheck) must not follow it there.
// Outside ModeDirect, and for changes that write no CLB, it says nothing.
func (d *Driver) CheckOwnership(ctx context.Context, req *core.PlanRequest, ch *core.Change) error {
	if d.mode != ModeDirect || ch.By != core.WriterCloud || req == nil {
		return nil
	}
	lbID := ch.Params[ParamLoadBalancerID]
	if lbID == "" {
		return nil
	}
	obj := objectRef(req)
	ips := statusIPs(req)
	if len(ips) == 0 {
		return &core.KindError{Kind: core.ErrPrecondition, Object: obj,
			Msg: fmt.Sprintf("CLB %s: the object has no address in status.loadBalancer.ingress yet, so loopguard cannot tell that the CLB is its own; nothing is written to it", lbID)}
	}
	desc, ok := d.clb.api.(CLBDescriber)
	if !ok {
		return &core.KindError{Kind: core.ErrUnsupported, Object: obj,
			Msg: fmt.Sprintf("CLB %s: the CLB client cannot DescribeLoadBalancers, so loopguard cannot tell that the CLB is the object's own; nothing is written to it", lbID)}
	}
	var resp *clb.DescribeLoadBalancersResponse
	err := d.clb.do(ctx, "DescribeLoadBalancers", lbID, func(ctx context.Context) error {
		var err error
		resp, err = desc.DescribeLoadBalancersWithContext(ctx, &clb.DescribeLoadBalancersRequest{LoadBalancerIds: []*string{&lbID}})
		return err
	})
	if err != nil {
		return err
	}
	var vips []string
	if resp != nil && resp.Response != nil {
		for _, lb := range resp.Response.LoadBalancerSet {
			if lb == nil || lb.LoadBalancerId == nil || *lb.LoadBalancerId != lbID {
				continue
			}
			for _, v := range lb.LoadBalancerVips {
				if v != nil {
					vips = append(vips, *v)
				}
			}
			if lb.AddressIPv6 != nil && *lb.AddressIPv6 != "" {
				vips = append(vips, *lb.AddressIPv6)
			}
		}
	}
	for _, ip := range ips {
		if slices.ContainsFunc(vips, func(v string) bool { return sameAddress(v, ip) }) {
			return nil
		}
	}
	found := "it was not found"
	if len(vips) > 0 {
		found = "its addresses are " + strings.Join(vips, ", ")
	}
	return &core.KindError{Kind: core.ErrInvalid, Object: obj,
		Msg: fmt.Sprintf("CLB %s (from the object's annotations) is not this object's: %s, and status.loadBalancer.ingress holds %s; nothing is written to it",
			lbID, found, strings.Join(ips, ", "))}
}

func objectRef(req *core.PlanRequest) core.ObjectRef {
	if k, ok := core.KeyOf(req.Object); ok {
		return core.ObjectRef{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	}
	return core.ObjectRef{}
}

// statusIPs lists the addresses a Service's or an Ingress's status publishes.
func statusIPs(req *core.PlanRequest) []string {
	var ips []string
	switch o := req.Object.(type) {
	case *corev1.Service:
		for _, in := range o.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			}
		}
	case *networkingv1.Ingress:
		for _, in := range o.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			}
		}
	}
	return ips
}

// sameAddress compares addresses as the API server's legacy parser reads them.
func sameAddress(a, b string) bool {
	if a == b {
		return true
	}
	x, y := netutils.ParseIPSloppy(a), netutils.ParseIPSloppy(b)
	return x != nil && y != nil && x.Equal(y)
}
