package volcengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/volcengine/volcengine-go-sdk/service/clb"
	sdk "github.com/volcengine/volcengine-go-sdk/volcengine"
	"github.com/volcengine/volcengine-go-sdk/volcengine/request"
	"github.com/volcengine/volcengine-go-sdk/volcengine/volcengineerr"
	corev1 "k8s.io/api/core/v1"

	"github.com/loopguard/loopguard/core"
)

// CLBAPI is the part of the official CLB client (volcengine-go-sdk v1.1.35 service/clb, API
// 2020-04-01) that CLBReader calls. *clb.CLB implements it; it is an interface only so a host
// can wrap the client (metrics, rate limiting).
type CLBAPI interface {
	DescribeLoadBalancersWithContext(sdk.Context, *clb.DescribeLoadBalancersInput, ...request.Option) (*clb.DescribeLoadBalancersOutput, error)
	DescribeListenersWithContext(sdk.Context, *clb.DescribeListenersInput, ...request.Option) (*clb.DescribeListenersOutput, error)
	DescribeListenerAttributesWithContext(sdk.Context, *clb.DescribeListenerAttributesInput, ...request.Option) (*clb.DescribeListenerAttributesOutput, error)
	DescribeServerGroupAttributesWithContext(sdk.Context, *clb.DescribeServerGroupAttributesInput, ...request.Option) (*clb.DescribeServerGroupAttributesOutput, error)
}

var _ CLBAPI = (*clb.CLB)(nil)

// CLBReaderIAMActions are the Volcengine IAM actions a CLBReader calls, for the policy of the
// user or role whose key pair it is given (docs/permissions.md): reads only. The driver
// itself calls no cloud API; it writes the Service's annotations through the cluster.
func CLBReaderIAMActions() []string {
	return []string{"clb:DescribeLoadBalancers", "clb:DescribeListeners", "clb:DescribeListenerAttributes", "clb:DescribeServerGroupAttributes"}
}

// CLBReaderOptions tune a CLBReader; nil means the defaults.
type CLBReaderOptions struct {
	// PageSize for DescribeListeners (1-100, the API's range); default 100.
	PageSize int
	// RetryDelay is what a RetryError suggests after throttling or a 5xx; default 5 s.
	RetryDelay time.Duration
	// Logger defaults to a null logger. Credentials never reach it: the reader never sends
	// them itself (it reads the SDK client's only to keep them out of error texts).
	Logger hclog.Logger
	// OnCall, when set, is told of every API request the reader sends: the action
	// ("DescribeLoadBalancerAttributes") and, when it failed, the cloud's error code, else "".
	// It runs on the calling goroutine, so it must be quick and safe for concurrent use
	// (adapters/controller.CloudAPIMetrics counts the calls for Prometheus).
	OnCall func(action, code string)
}

// CLBReader reads what the Volcengine API says about the CLBs of Services, for the facts their
// annotations do not carry: the address type of a reused CLB, PROXY protocol on the
// listeners, and the backends the listeners send to (DescribeServerGroupAttributes'
// Servers[].Type: ecs, the nodes' NodePorts; eni, Pod ENIs) (docs/sources.md#vke). It only calls Describe actions. The result is a CLBSnapshot for
// Options.CLBs, because Translate must stay pure: read first, then translate.
//
// It is safe for concurrent use when the client is (the SDK's is).
type CLBReader struct {
	client   CLBAPI
	secrets  []string
	pageSize int64
	retry    time.Duration
	log      hclog.Logger
	onCall   func(action, code string)
}

// NewCLBReader returns a reader over client, typically clb.New(session); opts may be nil.
func NewCLBReader(client CLBAPI, opts *CLBReaderOptions) *CLBReader {
	r := &CLBReader{client: client, pageSize: 100, retry: 5 * time.Second, log: hclog.NewNullLogger()}
	if opts != nil {
		if opts.PageSize > 0 && opts.PageSize <= 100 {
			r.pageSize = int64(opts.PageSize)
		}
		if opts.RetryDelay > 0 {
			r.retry = opts.RetryDelay
		}
		if opts.Logger != nil {
			r.log = opts.Logger
		}
		r.onCall = opts.OnCall
	}
	r.log = r.log.Named("volcengine-clb")
	if c, ok := client.(*clb.CLB); ok && c.Config.Credentials != nil {
		// Only to keep the key pair out of error texts: the reader never sends it itself.
		if v, err := c.Config.Credentials.Get(); err == nil {
			r.secrets = []string{v.SecretAccessKey, v.SessionToken, v.AccessKeyID}
		}
	}
	return r
}

// redact removes the client's access key pair and session token from a text.
func (r *CLBReader) redact(s string) string {
	for _, secret := range r.secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// AuthError is a call the cloud refused for its credentials, its signature, its region or an
// IAM permission. It matches core.ErrUnauthenticated, its text says what to check and never
// holds the key pair, and the SDK's volcengineerr.RequestFailure is reachable with errors.As.
type AuthError struct {
	// Action is the API action ("DescribeListeners"), Code the cloud's error code.
	Action, Code string
	// Hint says what to check.
	Hint string
	msg  string
	err  error
}

func (e *AuthError) Error() string {
	return "volcengine clb " + e.Action + ": " + e.Code + ": " + e.msg + " (" + e.Hint + ")"
}

// Unwrap returns the SDK's error.
func (e *AuthError) Unwrap() error { return e.err }

// Is makes an AuthError match core.ErrUnauthenticated.
func (e *AuthError) Is(target error) bool { return target == core.ErrUnauthenticated }

// authHint says what to check for the gateway's authentication and authorization codes
// (Volcengine's common error codes, docs/sources.md#vke), or "" for any other code.
func authHint(code string, status int, action string) string {
	switch code {
	case "InvalidAccessKey":
		return "the AccessKeyId is not known to Volcengine: check the access key ID"
	case "SignatureDoesNotMatch":
		return "the signature does not match: check the SecretAccessKey that goes with the access key ID"
	case "InvalidTimestamp":
		return "the request's X-Date is too far from Volcengine's clock: check this machine's time"
	case "ServiceNotFound":
		return "the request is signed for another service: the client must sign for the clb service"
	case "InvalidRegion":
		return "the API does not serve the client's region: check the region the client is configured with (cn-beijing, cn-shanghai, ...)"
	case "MissingAuthenticationToken", "MissingSignature", "InvalidAuthorization", "InvalidCredential":
		return "the Authorization header was refused: check the access key pair and the region the client is configured with"
	case "AccessDenied", "Forbidden", "NoPermission":
		return "the credentials lack the IAM permission for clb:" + action + ": grant it to the user or role"
	}
	switch status {
	case 401:
		return "the credentials were refused: check the access key pair"
	case 403:
		return "the credentials lack the IAM permission for clb:" + action + ": grant it to the user or role"
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// maxIDsPerCall is DescribeLoadBalancers' documented limit on LoadBalancerIds.N.
const maxIDsPerCall = 20

// ListenerKey is a protocol and port of a Service, to pick the listeners that serve it.
type ListenerKey struct {
	Protocol string
	Port     int64
}

// Snapshot reads the CLB of every Service that names one: by its reused CLB ID
// (loadbalancer-id), else by the addresses in its status. The snapshot is keyed by CLB ID and by
// every address, so the dialect finds it either way. A CLB the API does not know is left out
// (the dialect then falls back to the annotations), as are Services with neither an ID nor an
// address (not created yet). ProxyProtocol is judged over the listeners that serve the
// Services' ports.
//
// Throttling and server errors give a *core.RetryError; other API errors are returned wrapped,
// with the SDK's volcengineerr.RequestFailure reachable through errors.As. What was read
// before an error is returned with it.
func (r *CLBReader) Snapshot(ctx context.Context, svcs ...*corev1.Service) (CLBSnapshot, error) {
	type want struct {
		ports []ListenerKey
	}
	byID := map[string]*want{}
	var ids []string
	byAddr := map[string]*want{}
	var addrs []string
	for _, svc := range svcs {
		if svc == nil {
			continue
		}
		f, _ := ReadService(svc)
		ports := serviceListenerKeys(svc)
		switch {
		case f.LoadBalancerID != "":
			w, ok := byID[f.LoadBalancerID]
			if !ok {
				w = &want{}
				byID[f.LoadBalancerID] = w
				ids = append(ids, f.LoadBalancerID)
			}
			w.ports = append(w.ports, ports...)
		default:
			for _, a := range f.Addresses {
				w, ok := byAddr[a]
				if !ok {
					w = &want{}
					byAddr[a] = w
					addrs = append(addrs, a)
				}
				w.ports = append(w.ports, ports...)
			}
		}
	}

	snap := CLBSnapshot{}
	found := map[string]*clbRecord{}
	var order []string
	add := func(rec *clbRecord, ports []ListenerKey) {
		if old, ok := found[rec.id]; ok {
			old.ports = append(old.ports, ports...)
			return
		}
		rec.ports = ports
		found[rec.id] = rec
		order = append(order, rec.id)
	}
	for start := 0; start < len(ids); start += maxIDsPerCall {
		batch := ids[start:min(start+maxIDsPerCall, len(ids))]
		recs, err := r.describeByIDs(ctx, batch)
		if err != nil {
			return snap, err
		}
		for _, rec := range recs {
			add(rec, byID[rec.id].ports)
		}
	}
	for _, a := range addrs {
		rec, err := r.describeByAddress(ctx, a)
		if err != nil {
			return snap, err
		}
		if rec != nil {
			add(rec, byAddr[a].ports)
		}
	}
	for _, id := range order {
		rec := found[id]
		ls, err := r.listeners(ctx, id)
		if err != nil {
			return snap, err
		}
		groups, err := r.serverGroups(ctx, ls, rec.ports)
		if err != nil {
			return snap, err
		}
		f := rec.facts(ls, groups)
		snap[id] = f
		for _, a := range f.Addresses {
			snap[a] = f
		}
	}
	return snap, nil
}

// ReadCLB reads one CLB by ID or by address, judging PROXY protocol over the listeners that
// serve ports (all listeners when ports is empty). found is false when no CLB has it.
func (r *CLBReader) ReadCLB(ctx context.Context, idOrAddress string, ports ...ListenerKey) (facts CLBFacts, found bool, err error) {
	var rec *clbRecord
	if looksLikeCLBID(idOrAddress) {
		recs, err := r.describeByIDs(ctx, []string{idOrAddress})
		if err != nil || len(recs) == 0 {
			return CLBFacts{}, false, err
		}
		rec = recs[0]
	} else {
		rec, err = r.describeByAddress(ctx, idOrAddress)
		if err != nil || rec == nil {
			return CLBFacts{}, false, err
		}
	}
	rec.ports = ports
	ls, err := r.listeners(ctx, rec.id)
	if err != nil {
		return CLBFacts{}, false, err
	}
	groups, err := r.serverGroups(ctx, ls, ports)
	if err != nil {
		return CLBFacts{}, false, err
	}
	return rec.facts(ls, groups), true, nil
}

// looksLikeCLBID: CLB IDs start with "clb-" (the console, the API reference and the CCM's
// examples all show clb-<suffix>); anything else is read as an address.
func looksLikeCLBID(s string) bool { return strings.HasPrefix(s, "clb-") }

type clbRecord struct {
	id, typ   string
	addresses []string
	ports     []ListenerKey
}

func (rec *clbRecord) facts(ls []ListenerFacts, groups []ServerGroupFacts) CLBFacts {
	f := CLBFacts{ID: rec.id, Addresses: rec.addresses, Listeners: ls, ServerGroups: groups, Backends: backendsOf(groups)}
	switch strings.ToLower(rec.typ) {
	case "private":
		f.AddressType = AddressTypePrivate
	case "public":
		f.AddressType = AddressTypePublic
	}
	f.ProxyProtocol = proxyProtocolFor(ls, rec.ports)
	return f
}

// serving reports whether a listener serves one of ports (every listener does when ports is empty).
func serving(l *ListenerFacts, ports []ListenerKey) bool {
	return len(ports) == 0 || slices.ContainsFunc(ports, func(k ListenerKey) bool {
		return k.Port == l.Port && strings.EqualFold(k.Protocol, l.Protocol)
	})
}

// serverGroups reads, with DescribeServerGroupAttributes, the server group of every listener
// that serves ports, once per group, in the listeners' order.
func (r *CLBReader) serverGroups(ctx context.Context, ls []ListenerFacts, ports []ListenerKey) ([]ServerGroupFacts, error) {
	var out []ServerGroupFacts
	var seen []string
	for i := range ls {
		id := ls[i].ServerGroupID
		if id == "" || !serving(&ls[i], ports) || slices.Contains(seen, id) {
			continue
		}
		seen = append(seen, id)
		resp, err := r.client.DescribeServerGroupAttributesWithContext(ctx, &clb.DescribeServerGroupAttributesInput{ServerGroupId: sdk.String(id)})
		if err != nil {
			return out, r.classify(ctx, "DescribeServerGroupAttributes", err)
		}
		g := ServerGroupFacts{ID: id, Type: sdk.StringValue(resp.Type)}
		for _, s := range resp.Servers {
			if s == nil {
				continue
			}
			g.Servers = append(g.Servers, BackendServer{Type: sdk.StringValue(s.Type), IP: sdk.StringValue(s.Ip),
				InstanceID: sdk.StringValue(s.InstanceId), Port: sdk.Int64Value(s.Port)})
		}
		out = append(out, g)
	}
	if len(out) > 0 {
		r.log.Debug("described server groups", "groups", len(out))
	}
	return out, nil
}

// backendsOf is the verdict over the servers of groups: BackendsENI or BackendsECS when every
// server has that Type, BackendsMixed when both occur, BackendsUnrecognised when a Type is
// neither, BackendsNotRead when there are no servers.
func backendsOf(groups []ServerGroupFacts) Backends {
	var eni, ecs, other bool
	for _, g := range groups {
		for _, s := range g.Servers {
			switch strings.ToLower(s.Type) {
			case string(BackendsENI):
				eni = true
			case string(BackendsECS):
				ecs = true
			default:
				other = true
			}
		}
	}
	switch {
	case other:
		return BackendsUnrecognised
	case eni && ecs:
		return BackendsMixed
	case eni:
		return BackendsENI
	case ecs:
		return BackendsECS
	}
	return BackendsNotRead
}

// proxyProtocolFor is Yes when every listener serving the ports sends the PROXY header, No when
// none does, Unknown when they differ or none serves them.
func proxyProtocolFor(ls []ListenerFacts, ports []ListenerKey) core.Fact {
	verdict := core.Unknown
	for i := range ls {
		l := &ls[i]
		if !serving(l, ports) {
			continue
		}
		switch {
		case !l.ProxyProtocol.Known():
			return core.Unknown
		case verdict == core.Unknown:
			verdict = l.ProxyProtocol
		case verdict != l.ProxyProtocol:
			return core.Unknown
		}
	}
	return verdict
}

func serviceListenerKeys(svc *corev1.Service) []ListenerKey {
	out := make([]ListenerKey, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		out = append(out, ListenerKey{Protocol: proto, Port: int64(p.Port)})
	}
	return out
}

func (r *CLBReader) describeByIDs(ctx context.Context, ids []string) ([]*clbRecord, error) {
	in := &clb.DescribeLoadBalancersInput{LoadBalancerIds: sdk.StringSlice(ids), PageSize: sdk.Int64(maxIDsPerCall)}
	out, err := r.client.DescribeLoadBalancersWithContext(ctx, in)
	r.observe("DescribeLoadBalancers", err)
	if err != nil {
		return nil, r.classify(ctx, "DescribeLoadBalancers", err)
	}
	recs := make([]*clbRecord, 0, len(out.LoadBalancers))
	for _, lb := range out.LoadBalancers {
		if lb == nil || lb.LoadBalancerId == nil || !slices.Contains(ids, *lb.LoadBalancerId) {
			continue
		}
		recs = append(recs, recordOf(lb))
	}
	r.log.Debug("described load balancers", "ids", len(ids), "found", len(recs))
	return recs, nil
}

// describeByAddress finds the CLB holding an address: a private address (EniAddress) first,
// since the dialect reads the status, which shows the private address of a private CLB; then
// a public one (EipAddress).
func (r *CLBReader) describeByAddress(ctx context.Context, addr string) (*clbRecord, error) {
	for _, in := range []*clb.DescribeLoadBalancersInput{
		{EniAddress: sdk.String(addr)},
		{EipAddress: sdk.String(addr)},
	} {
		out, err := r.client.DescribeLoadBalancersWithContext(ctx, in)
		r.observe("DescribeLoadBalancers", err)
		if err != nil {
			return nil, r.classify(ctx, "DescribeLoadBalancers", err)
		}
		for _, lb := range out.LoadBalancers {
			if lb != nil && lb.LoadBalancerId != nil {
				return recordOf(lb), nil
			}
		}
	}
	return nil, nil
}

func recordOf(lb *clb.LoadBalancerForDescribeLoadBalancersOutput) *clbRecord {
	rec := &clbRecord{id: sdk.StringValue(lb.LoadBalancerId), typ: sdk.StringValue(lb.Type)}
	for _, a := range []string{sdk.StringValue(lb.EniAddress), sdk.StringValue(lb.EipAddress)} {
		if a != "" && !slices.Contains(rec.addresses, a) {
			rec.addresses = append(rec.addresses, a)
		}
	}
	for _, e := range lb.EniAddresses {
		if e == nil {
			continue
		}
		for _, a := range []string{sdk.StringValue(e.EniAddress), sdk.StringValue(e.EipAddress)} {
			if a != "" && !slices.Contains(rec.addresses, a) {
				rec.addresses = append(rec.addresses, a)
			}
		}
	}
	return rec
}

// listeners lists every listener of a CLB, page by page. A listener whose list entry lacks
// ProxyProtocolType is read again with DescribeListenerAttributes.
func (r *CLBReader) listeners(ctx context.Context, id string) ([]ListenerFacts, error) {
	var out []ListenerFacts
	for page := int64(1); ; page++ {
		resp, err := r.client.DescribeListenersWithContext(ctx, &clb.DescribeListenersInput{
			LoadBalancerId: sdk.String(id), PageNumber: sdk.Int64(page), PageSize: sdk.Int64(r.pageSize)})
		r.observe("DescribeListeners", err)
		if err != nil {
			return out, r.classify(ctx, "DescribeListeners", err)
		}
		for _, l := range resp.Listeners {
			if l == nil {
				continue
			}
			lf := ListenerFacts{ID: sdk.StringValue(l.ListenerId), Protocol: sdk.StringValue(l.Protocol), Port: sdk.Int64Value(l.Port),
				ServerGroupID: sdk.StringValue(l.ServerGroupId)}
			pp := l.ProxyProtocolType
			if pp == nil && lf.ID != "" {
				attr, err := r.client.DescribeListenerAttributesWithContext(ctx, &clb.DescribeListenerAttributesInput{ListenerId: sdk.String(lf.ID)})
				r.observe("DescribeListenerAttributes", err)
				if err != nil {
					return out, r.classify(ctx, "DescribeListenerAttributes", err)
				}
				pp = attr.ProxyProtocolType
				if lf.ServerGroupID == "" {
					lf.ServerGroupID = sdk.StringValue(attr.ServerGroupId)
				}
			}
			lf.ProxyProtocol = proxyProtocolFact(sdk.StringValue(pp))
			out = append(out, lf)
		}
		total := sdk.Int64Value(resp.TotalCount)
		if len(resp.Listeners) == 0 || int64(len(out)) >= total {
			break
		}
	}
	r.log.Debug("described listeners", "load_balancer", id, "listeners", len(out))
	return out, nil
}

func proxyProtocolFact(v string) core.Fact {
	switch v {
	case ProxyProtocolStandard:
		return core.Yes
	case ProxyProtocolOff:
		return core.No
	}
	return core.Unknown
}

// observe tells OnCall of one request: "" for success, the SDK error's code, or "Unknown".
func (r *CLBReader) observe(action string, err error) {
	if r.onCall == nil {
		return
	}
	code := ""
	if err != nil {
		code = "Unknown"
		var ve volcengineerr.Error
		if errors.As(err, &ve) && ve.Code() != "" {
			code = ve.Code()
		}
	}
	r.onCall(action, code)
}

// Throttling codes: FlowLimitExceeded is the gateway's (docs 6448/76370);
// AccountFlowLimitExceeded is the per-account code Volcengine's cello CNI treats the same way.
var throttleCodes = []string{"FlowLimitExceeded", "AccountFlowLimitExceeded", "RequestLimitExceeded", "Throttling"}

// classify turns throttling, 5xx and transport failures into a *core.RetryError; everything
// else is returned wrapped. The SDK error stays reachable with errors.As, and a cancelled
// context with errors.Is.
func (r *CLBReader) classify(ctx context.Context, action string, err error) error {
	msg := "volcengine clb " + action
	if cerr := ctx.Err(); cerr != nil {
		// The SDK reports a cancelled call as a RequestError without unwrapping to the cause.
		return fmt.Errorf("%s: %w: %w", msg, cerr, err)
	}
	var rf volcengineerr.RequestFailure
	if errors.As(err, &rf) {
		if hint := authHint(rf.Code(), rf.StatusCode(), action); hint != "" {
			return &AuthError{Action: action, Code: rf.Code(), Hint: hint, msg: r.redact(firstLine(rf.Message())), err: err}
		}
		if rf.StatusCode() == 429 || rf.StatusCode() >= 500 || slices.Contains(throttleCodes, rf.Code()) {
			r.log.Warn("cloud read will be retried", "action", action, "code", rf.Code(), "status", rf.StatusCode(), "request_id", rf.RequestID())
			return &core.RetryError{After: r.retry, Msg: msg + ": " + rf.Code(), Err: err}
		}
		return fmt.Errorf("%s: %w", msg, err)
	}
	var ve volcengineerr.Error
	if errors.As(err, &ve) && (ve.Code() == "RequestError" || ve.Code() == request.ErrCodeResponseTimeout) {
		// The connection failed or timed out (the SDK's own retryable codes): the API may be
		// reachable on the next attempt.
		r.log.Warn("cloud read will be retried", "action", action, "code", ve.Code())
		return &core.RetryError{After: r.retry, Msg: msg + ": " + ve.Code(), Err: err}
	}
	return fmt.Errorf("%s: %w", msg, err)
}
