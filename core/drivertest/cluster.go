package drivertest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/memcluster"
)

// Cluster is an in-memory core.ClusterWriter (core/memcluster, which programs can link
// without the testing package). It is safe for concurrent use.
type Cluster = memcluster.Cluster

// NewCluster returns a Cluster holding objs.
func NewCluster(objs ...*unstructured.Unstructured) *Cluster { return memcluster.NewCluster(objs...) }

// KeyOf returns the ObjectKey of an unstructured object.
func KeyOf(u *unstructured.Unstructured) core.ObjectKey { return memcluster.KeyOf(u) }

// ToUnstructured converts a typed object to unstructured, with its apiVersion and kind set.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	return memcluster.ToUnstructured(obj)
}
