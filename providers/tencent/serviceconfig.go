package tencent

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TkeServiceConfig's group, version and kind (docs/sources.md#tkeserviceconfig).
const (
	ServiceConfigGroup   = "cloud.tencent.com"
	ServiceConfigVersion = "v1alpha1"
	ServiceConfigKind    = "TkeServiceConfig"
)

// ServiceConfigGVK is the TkeServiceConfig's GroupVersionKind.
var ServiceConfigGVK = schema.GroupVersionKind{Group: ServiceConfigGroup, Version: ServiceConfigVersion, Kind: ServiceConfigKind}

// Suffixes of the configs TKE's controllers create for the -auto annotations (457/45490,
// 457/45700). A config named by hand may not end with either.
const (
	AutoServiceConfigSuffix = "-auto-service-config"
	AutoIngressConfigSuffix = "-auto-ingress-config"
)

// Field paths inside a TkeServiceConfig, for errors and for writers that patch the object.
var (
	L4ListenersPath = field.NewPath("spec", "loadBalancer", "l4Listeners")
	L7ListenersPath = field.NewPath("spec", "loadBalancer", "l7Listeners")
)

// ListenerKey selects a CLB listener the way TkeServiceConfig does: protocol and port.
type ListenerKey struct {
	// Protocol is upper case: TCP, UDP (layer 4) or HTTP, HTTPS (layer 7).
	Protocol string
	Port     int32
}

func (k ListenerKey) String() string { return k.Protocol + ":" + strconv.Itoa(int(k.Port)) }

// ServiceConfig is what loopguard reads from a TkeServiceConfig: the listener entries and the
// source-NAT attributes on them. It is a read view, not the object: it does not hold the fields
// loopguard does not model (health checks, sessions, domains, ...), so writers must patch the
// original object (docs/sources.md#tkeserviceconfig: everything else survives a round trip) rather than
// serialise this type.
type ServiceConfig struct {
	Namespace, Name string
	L4Listeners     []L4Listener
	L7Listeners     []L7Listener
}

// L4Listener is one spec.loadBalancer.l4Listeners[] entry.
type L4Listener struct {
	ListenerKey
	// Index is the entry's position in the list.
	Index int
	// SnatEnable is nil when the entry does not set it (the CLB attribute is left alone).
	SnatEnable *bool
	// SnatEnableQuoted is set when snatEnable was written as a string ("true"), the Chinese
	// guide's spelling.
	SnatEnableQuoted bool
}

// L7Listener is one spec.loadBalancer.l7Listeners[] entry.
type L7Listener struct {
	ListenerKey
	Index            int
	SnatEnable       *bool
	SnatEnableQuoted bool
	// KeepaliveEnable is nil when absent; otherwise 0 or 1 (an integer, not a boolean).
	KeepaliveEnable *int64
}

// SNAT reports whether the entry turns source NAT on with snatEnable.
func (l *L4Listener) SNAT() bool { return l.SnatEnable != nil && *l.SnatEnable }

// SNAT reports whether the entry sets snatEnable: true.
func (l *L7Listener) SNAT() bool { return l.SnatEnable != nil && *l.SnatEnable }

// Keepalive reports whether the entry sets keepaliveEnable: 1.
func (l *L7Listener) Keepalive() bool { return l.KeepaliveEnable != nil && *l.KeepaliveEnable == 1 }

// L4 returns the layer-4 entry for a listener, or nil.
func (c *ServiceConfig) L4(k ListenerKey) *L4Listener {
	for i := range c.L4Listeners {
		if c.L4Listeners[i].ListenerKey == k {
			return &c.L4Listeners[i]
		}
	}
	return nil
}

// L7 returns the layer-7 entry for a listener, or nil.
func (c *ServiceConfig) L7(k ListenerKey) *L7Listener {
	for i := range c.L7Listeners {
		if c.L7Listeners[i].ListenerKey == k {
			return &c.L7Listeners[i]
		}
	}
	return nil
}

// ParseServiceConfig reads the parts of a TkeServiceConfig loopguard uses. Fields it does not
// model are ignored, whatever they hold; the fields it reads must have the documented types,
// or it returns field errors with their paths (spec.loadBalancer.l4Listeners[0].snatEnable)
// and no config. It never modifies u.
func ParseServiceConfig(u *unstructured.Unstructured) (*ServiceConfig, field.ErrorList) {
	cfg := &ServiceConfig{Namespace: u.GetNamespace(), Name: u.GetName()}
	var errs field.ErrorList
	if gvk := u.GroupVersionKind(); gvk.Group != ServiceConfigGroup || gvk.Kind != ServiceConfigKind {
		return nil, field.ErrorList{field.Invalid(field.NewPath("kind"), gvk.String(), "not a "+ServiceConfigGroup+" "+ServiceConfigKind)}
	}
	spec, ok, err := mapAt(u.Object, "spec")
	if err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec"), typeName(u.Object["spec"]), err.Error()))
	}
	if !ok {
		return cfg, errs
	}
	lbPath := field.NewPath("spec", "loadBalancer")
	lb, ok, err := mapAt(spec, "loadBalancer")
	if err != nil {
		errs = append(errs, field.Invalid(lbPath, typeName(spec["loadBalancer"]), err.Error()))
	}
	if !ok {
		return cfg, errs
	}
	l4, l4errs := readListeners(lb, "l4Listeners", L4ListenersPath, []string{"TCP", "UDP", "TCP_SSL", "QUIC"}, false)
	errs = append(errs, l4errs...)
	for _, e := range l4 {
		cfg.L4Listeners = append(cfg.L4Listeners, L4Listener{ListenerKey: e.key, Index: e.index, SnatEnable: e.snat, SnatEnableQuoted: e.quoted})
	}
	l7, l7errs := readListeners(lb, "l7Listeners", L7ListenersPath, []string{"HTTP", "HTTPS"}, true)
	errs = append(errs, l7errs...)
	for _, e := range l7 {
		cfg.L7Listeners = append(cfg.L7Listeners, L7Listener{ListenerKey: e.key, Index: e.index, SnatEnable: e.snat, SnatEnableQuoted: e.quoted, KeepaliveEnable: e.keepalive})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// listenerEntry is what ParseServiceConfig reads from one l4Listeners[] or l7Listeners[] entry.
type listenerEntry struct {
	key       ListenerKey
	index     int
	snat      *bool
	quoted    bool
	keepalive *int64
}

// readListeners reads one of the listener lists: each entry's key (one of protocols), its
// snatEnable and, for layer 7, keepaliveEnable. Every entry's errors are reported; an entry
// whose key is bad or repeated is left out.
func readListeners(lb map[string]interface{}, name string, path *field.Path, protocols []string, keepalive bool) ([]listenerEntry, field.ErrorList) {
	list, errs := listEntries(lb, name, path)
	var out []listenerEntry
	seen := map[ListenerKey]int{}
	for i, m := range list {
		p := path.Index(i)
		if m == nil {
			continue
		}
		key, kerrs := listenerKey(m, p, protocols)
		errs = append(errs, kerrs...)
		e := listenerEntry{key: key, index: i}
		var serr *field.Error
		e.snat, e.quoted, serr = readBool(m, "snatEnable", p)
		if serr != nil {
			errs = append(errs, serr)
		}
		if keepalive {
			var kaerr *field.Error
			e.keepalive, kaerr = readKeepalive(m, p)
			if kaerr != nil {
				errs = append(errs, kaerr)
			}
		}
		if len(kerrs) > 0 {
			continue
		}
		if j, dup := seen[key]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (also at index %d)", key, j)))
			continue
		}
		seen[key] = i
		out = append(out, e)
	}
	return out, errs
}

// mapAt returns m[key] as a map; ok is false when absent or null.
func mapAt(m map[string]interface{}, key string) (map[string]interface{}, bool, error) {
	v, present := m[key]
	if !present || v == nil {
		return nil, false, nil
	}
	mm, isMap := v.(map[string]interface{})
	if !isMap {
		return nil, false, fmt.Errorf("must be an object")
	}
	return mm, true, nil
}

// listEntries returns the objects of a list field; a nil element marks an entry that is
// already reported as an error.
func listEntries(m map[string]interface{}, key string, p *field.Path) ([]map[string]interface{}, field.ErrorList) {
	v, present := m[key]
	if !present || v == nil {
		return nil, nil
	}
	list, ok := v.([]interface{})
	if !ok {
		return nil, field.ErrorList{field.Invalid(p, typeName(v), "must be a list")}
	}
	var errs field.ErrorList
	out := make([]map[string]interface{}, len(list))
	for i, item := range list {
		mm, ok := item.(map[string]interface{})
		if !ok {
			errs = append(errs, field.Invalid(p.Index(i), typeName(item), "must be an object"))
			continue
		}
		out[i] = mm
	}
	return out, errs
}

func listenerKey(m map[string]interface{}, p *field.Path, protocols []string) (ListenerKey, field.ErrorList) {
	var k ListenerKey
	var errs field.ErrorList
	switch v := m["protocol"].(type) {
	case nil:
		errs = append(errs, field.Required(p.Child("protocol"), "protocol and port select the listener"))
	case string:
		// TKE's examples write upper case; the CLB API treats protocols case-insensitively.
		k.Protocol = strings.ToUpper(v)
		ok := false
		for _, pr := range protocols {
			ok = ok || pr == k.Protocol
		}
		if !ok {
			errs = append(errs, field.NotSupported(p.Child("protocol"), v, protocols))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("protocol"), typeName(v), "must be a string"))
	}
	pv, present := m["port"]
	if !present || pv == nil {
		errs = append(errs, field.Required(p.Child("port"), "protocol and port select the listener"))
		return k, errs
	}
	n, ok := integer(pv)
	switch {
	case !ok:
		errs = append(errs, field.Invalid(p.Child("port"), pv, "must be an integer"))
	case n < 1 || n > 65535:
		errs = append(errs, field.Invalid(p.Child("port"), n, "must be between 1 and 65535"))
	default:
		k.Port = int32(n)
	}
	return k, errs
}

// readBool reads snatEnable: a boolean, or (acceptQuotedSNATEnable) the strings "true"/"false".
func readBool(m map[string]interface{}, key string, p *field.Path) (*bool, bool, *field.Error) {
	v, present := m[key]
	if !present || v == nil {
		return nil, false, nil
	}
	switch b := v.(type) {
	case bool:
		return &b, false, nil
	case string:
		if acceptQuotedSNATEnable && (b == "true" || b == "false") {
			t := b == "true"
			return &t, true, nil
		}
		return nil, false, field.Invalid(p.Child(key), b, "must be a boolean (true or false)")
	}
	return nil, false, field.Invalid(p.Child(key), v, "must be a boolean (true or false), not "+typeName(v))
}

// readKeepalive reads keepaliveEnable, an INTEGER 0 or 1 (docs/sources.md#tkeserviceconfig; the CLB API's
// KeepaliveEnable is an int64).
func readKeepalive(m map[string]interface{}, p *field.Path) (*int64, *field.Error) {
	v, present := m["keepaliveEnable"]
	if !present || v == nil {
		return nil, nil
	}
	fp := p.Child("keepaliveEnable")
	if _, isBool := v.(bool); isBool {
		return nil, field.Invalid(fp, v, "must be the integer 0 or 1, not a boolean")
	}
	if _, isString := v.(string); isString {
		return nil, field.Invalid(fp, v, "must be the integer 0 or 1, not a string")
	}
	n, ok := integer(v)
	if !ok {
		return nil, field.Invalid(fp, v, "must be the integer 0 or 1")
	}
	if n != 0 && n != 1 {
		return nil, field.NotSupported(fp, n, []string{"0", "1"})
	}
	return &n, nil
}

// integer accepts the number types unstructured decoding produces (int64, float64 with no
// fraction) and Go ints set by programs.
func integer(v interface{}) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n == math.Trunc(n) && !math.IsInf(n, 0) && math.Abs(n) < 1<<53 {
			return int64(n), true
		}
	}
	return 0, false
}

func typeName(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case int64, int, int32, float64:
		return "a number"
	case []interface{}:
		return "a list"
	case map[string]interface{}:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
