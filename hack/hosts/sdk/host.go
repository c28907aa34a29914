package sdk

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LoadBalancers names the cluster's LoadBalancer Services, as a platform SDK lists what it
// exposes.
func LoadBalancers(ctx context.Context, cfg *rest.Config) ([]string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range list.Items {
		if s.Spec.Type == "LoadBalancer" {
			names = append(names, s.Namespace+"/"+s.Name)
		}
	}
	return names, nil
}
