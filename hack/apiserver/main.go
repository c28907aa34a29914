package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loopguard/loopguard/adapters/manifest"
	"github.com/loopguard/loopguard/internal/apiserver"
)

type paths []string

func (p *paths) String() string     { return fmt.Sprint(*p) }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	// A flag set of its own: controller-runtime, which envtest brings in, registers a global
	// --kubeconfig.
	fs := flag.NewFlagSet("apiserver", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "loopguard-apiserver.kubeconfig", "where to write the kubeconfig of the throwaway server")
	var files paths
	fs.Var(&files, "f", "manifests to create in the server (a file or folder, repeatable); ClusterProfiles are skipped")
	_ = fs.Parse(os.Args[1:])
	if err := run(*kubeconfig, files); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(kubeconfig string, files []string) error {
	srv, err := apiserver.Launch(apiserver.WithCRDPaths("providers/tencent/crds"))
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg := srv.Config()
	if err := writeKubeconfig(kubeconfig, cfg); err != nil {
		return err
	}
	n, err := load(cfg, files)
	if err != nil {
		return err
	}
	fmt.Printf("kube-apiserver at %s with the TkeServiceConfig CRD; %d object(s) created.\n", cfg.Host, n)
	fmt.Printf("  loopguard scan --kubeconfig %s --profile examples/manifests/profile.yaml\n", kubeconfig)
	fmt.Printf("  loopguard apply --kubeconfig %s --profile examples/manifests/profile.yaml --dry-run\n", kubeconfig)
	fmt.Println("Interrupt (Ctrl-C) to stop it; its data goes with it.")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// writeKubeconfig writes an admin kubeconfig for the server, readable by its owner only.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["throwaway"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["throwaway"] = &clientcmdapi.Context{Cluster: "throwaway", AuthInfo: "admin"}
	kc.CurrentContext = "throwaway"
	return clientcmd.WriteToFile(*kc, path)
}

// load creates the manifests' objects, with their namespaces, as kubectl create would.
func load(cfg *rest.Config, files []string) (int, error) {
	if len(files) == 0 {
		return 0, nil
	}
	set, errs := (&manifest.Reader{}).Read(files...)
	if len(errs) > 0 {
		return 0, errs[0]
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		return 0, err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	created := 0
	namespaces := map[string]bool{}
	for _, o := range set.Objects {
		u, err := toUnstructured(o.Object)
		if err != nil {
			return created, err
		}
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return created, fmt.Errorf("%s: %w", o.Source, err)
		}
		ri := dyn.Resource(m.Resource)
		var target dynamic.ResourceInterface = ri
		if ns := u.GetNamespace(); ns != "" && m.Scope.Name() == "namespace" {
			if !namespaces[ns] {
				nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
				if _, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return created, err
				}
				namespaces[ns] = true
			}
			target = ri.Namespace(ns)
		}
		if _, err := target.Create(ctx, u, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
			return created, fmt.Errorf("%s: %s: %w", o.Source, o.Ref(), err)
		}
		created++
	}
	return created, nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
