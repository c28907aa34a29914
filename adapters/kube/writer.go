package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/loopguard/loopguard/core"
)

// Options configure a Writer. A nil *Options means the defaults.
type Options struct {
	// FieldManager names loopguard's server-side apply manager; default core.FieldManager.
	FieldManager string
	// Logger defaults to a null logger.
	Logger hclog.Logger
}

// Writer implements core.ClusterWriter with the dynamic client.
type Writer struct {
	dyn     dynamic.Interface
	mapper  meta.RESTMapper
	manager string
	log     hclog.Logger
}

var _ core.ClusterWriter = (*Writer)(nil)

// NewWriter builds a Writer from a REST config, discovering resources lazily.
func NewWriter(cfg *rest.Config, opts *Options) (*Writer, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return NewWriterFor(dyn, mapper, opts), nil
}

// NewWriterFor builds a Writer from a dynamic client and a REST mapper the host already has.
func NewWriterFor(dyn dynamic.Interface, mapper meta.RESTMapper, opts *Options) *Writer {
	w := &Writer{dyn: dyn, mapper: mapper, manager: core.FieldManager, log: hclog.NewNullLogger()}
	if opts != nil {
		if opts.FieldManager != "" {
			w.manager = opts.FieldManager
		}
		if opts.Logger != nil {
			w.log = opts.Logger
		}
	}
	w.log = w.log.Named("kube")
	return w
}

func (w *Writer) resource(key core.ObjectKey) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(key.APIVersion)
	if err != nil {
		return nil, &core.KindError{Kind: core.ErrInvalid, Msg: "apiVersion " + key.APIVersion, Err: err}
	}
	m, err := w.mapper.RESTMapping(gv.WithKind(key.Kind).GroupKind(), gv.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			if rm, ok := w.mapper.(meta.ResettableRESTMapper); ok {
				// A CRD installed after the first lookup: look again once.
				rm.Reset()
				m, err = w.mapper.RESTMapping(gv.WithKind(key.Kind).GroupKind(), gv.Version)
			}
		}
		if err != nil {
			if meta.IsNoMatchError(err) {
				return nil, &core.KindError{Kind: core.ErrUnsupported, Msg: fmt.Sprintf("the cluster does not serve %s %s (is its CRD installed?)", key.APIVersion, key.Kind), Err: err}
			}
			return nil, err
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return w.dyn.Resource(m.Resource).Namespace(key.Namespace), nil
	}
	return w.dyn.Resource(m.Resource), nil
}

// Get returns the live object, or (nil, nil) when it does not exist.
func (w *Writer) Get(ctx context.Context, key core.ObjectKey) (*unstructured.Unstructured, error) {
	r, err := w.resource(key)
	if err != nil {
		return nil, err
	}
	u, err := r.Get(ctx, key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, classify(key, err)
}

// Apply server-side-applies a partial object under loopguard's field manager, without force.
func (w *Writer) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	key := keyOf(obj)
	r, err := w.resource(key)
	if err != nil {
		return err
	}
	_, err = r.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: w.manager})
	if err == nil {
		w.log.Debug("applied", "object", key.String())
	}
	return classify(key, err)
}

// Update writes an object read by Get; a changed resourceVersion is core.ErrConflict.
func (w *Writer) Update(ctx context.Context, obj *unstructured.Unstructured) error {
	key := keyOf(obj)
	r, err := w.resource(key)
	if err != nil {
		return err
	}
	_, err = r.Update(ctx, obj, metav1.UpdateOptions{FieldManager: w.manager})
	if err == nil {
		w.log.Debug("updated", "object", key.String())
	}
	return classify(key, err)
}

// Create creates an object; an existing one is core.ErrConflict.
func (w *Writer) Create(ctx context.Context, obj *unstructured.Unstructured) error {
	key := keyOf(obj)
	r, err := w.resource(key)
	if err != nil {
		return err
	}
	_, err = r.Create(ctx, obj, metav1.CreateOptions{FieldManager: w.manager})
	if err == nil {
		w.log.Debug("created", "object", key.String())
	}
	return classify(key, err)
}

// Delete deletes an object read by Get, with its UID and resourceVersion as preconditions so
// an object replaced or changed since is not deleted (core.ErrConflict); one already gone is
// success.
func (w *Writer) Delete(ctx context.Context, obj *unstructured.Unstructured) error {
	key := keyOf(obj)
	r, err := w.resource(key)
	if err != nil {
		return err
	}
	pre := &metav1.Preconditions{}
	if uid := obj.GetUID(); uid != "" {
		pre.UID = &uid
	}
	if rv := obj.GetResourceVersion(); rv != "" {
		pre.ResourceVersion = &rv
	}
	err = r.Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: pre})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		w.log.Debug("deleted", "object", key.String())
	}
	return classify(key, err)
}

func keyOf(u *unstructured.Unstructured) core.ObjectKey {
	return core.ObjectKey{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// classify gives API errors the core's kinds; the API error stays reachable with errors.As.
func classify(key core.ObjectKey, err error) error {
	if err == nil {
		return nil
	}
	ref := core.ObjectRef{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return &core.KindError{Kind: core.ErrConflict, Object: ref, Msg: "conflict", Err: err}
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return &core.KindError{Kind: core.ErrInvalid, Object: ref, Msg: "rejected by the API server", Err: err}
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsServiceUnavailable(err):
		after := 5
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			after = s
		}
		return &core.RetryError{After: time.Duration(after) * time.Second, Msg: ref.String() + ": API server busy", Err: err}
	}
	return err
}

// isNotServed reports an error for a resource the cluster does not serve.
func isNotServed(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}
