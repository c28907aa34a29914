package kubernetes

import (
	"testing"
)

// TestIBMParsers: enable-features and ip-type as cloud-provider-ibm (commit 568c208) reads them.
func TestIBMParsers(t *testing.T) {
	checkSpellings(t, srcIBMEnable, map[string]string{absent: "false", "proxy-protocol": "true", "Proxy-Protocol": "true", "proxy-protocol, nlb": "true",
		" proxy - protocol ": "true", "proxyprotocol": "false", "true": "false", "True": "false", "TRUE": "false", "1": "false", "t": "false",
		"yes": "false", "": "false", "garbage": "false"},
		func(v string) string {
			if v == absent {
				return "false"
			}
			return outcome(ibmFeatures(v)["proxy-protocol"], valueTaken)
		})
	checkSpellings(t, srcIBMIPType, map[string]string{absent: "unknown", "public": "public", "": "public", "private": "private", "Public": "private",
		"true": "private", "True": "private", "TRUE": "private", "1": "private", "t": "private", "yes": "private", "garbage": "private"},
		func(v string) string {
			ann := map[string]string{}
			if v != absent {
				ann["service.kubernetes.io/ibm-load-balancer-cloud-provider-ip-type"] = v
			}
			return scopeOfService(t, ann, "")
		})
}
