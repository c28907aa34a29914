package manifest

import (
	"bytes"
	"fmt"
	"testing"
)

// generate writes a cluster of nodes, LoadBalancer Services and one EndpointSlice per
// Service, as one multi-document YAML stream.
func generate(services, nodes int) []byte {
	var b bytes.Buffer
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: node-%d
  labels:
    kubernetes.io/hostname: node-%d
`, i, i)
	}
	for i := 0; i < services; i++ {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata:
  name: svc-%d
  namespace: ns-%d
  annotations:
    service.kubernetes.io/qcloud-loadbalancer-internal-subnetid: subnet-abc
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector:
    app: app-%d
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: svc-%d-abcde
  namespace: ns-%d
  labels:
    kubernetes.io/service-name: svc-%d
addressType: IPv4
ports:
- name: http
  port: 8080
  protocol: TCP
endpoints:
- addresses: ["10.0.%d.%d"]
  nodeName: node-%d
  conditions: {ready: true}
- addresses: ["10.1.%d.%d"]
  nodeName: node-%d
  conditions: {ready: true}
`, i, i%20, i, i, i%20, i, i%250, i%250, i%nodes, i%250, i%250, (i+1)%nodes)
	}
	return b.Bytes()
}

func BenchmarkDecode10kServices(b *testing.B) {
	data := generate(10000, 50)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var s Set
		if errs := s.Decode("bench.yaml", data); len(errs) > 0 {
			b.Fatal(errs[0])
		}
		if len(s.Objects) != 20050 {
			b.Fatal(len(s.Objects))
		}
	}
}
