package cloudprovider_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	"k8s.io/client-go/tools/record"
	fakecloud "k8s.io/cloud-provider/fake"

	"github.com/loopguard/loopguard/adapters/cloudprovider"
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/providers/tencent"
	"github.com/loopguard/loopguard/providers/tencent/clbtest"
)

// Known credentials the secret scan looks for. They are long and distinctive so that no
// other text matches them by chance.
const (
	scanSecretID  = "AKIDscanSecretId7f3a9c2e4b1d"
	scanSecretKey = "scan-secret-key-9d8c7b6a5f4e3d2c1b0a"
	scanToken     = "scan-session-token-0a1b2c3d4e5f6a7b8c9d"
	scanWrongKey  = "scan-wrong-secret-key-1122334455667788"
)

// TestNoSecretInLogsEventsOrErrors runs a CCM fork's syncs in direct mode, with temporary
// credentials (SecretId, SecretKey and token), through a good run, faults (throttling, a
// 5xx, a busy CLB, a failed task), a cloud whose error messages echo the credentials back, a
// wrong key, a missing CAM permission and the delete; every log line of the driver, the
// decorator and the server, every event, every error and every returned status is scanned for
// the secret key, the wrong key, the token and the SecretId, and none holds any.
func TestNoSecretInLogsEventsOrErrors(t *testing.T) {
	var logs bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace, IncludeLocation: true})
	var srvLogs bytes.Buffer
	srv, err := clbtest.Start(&clbtest.Options{
		Credentials:  []clbtest.Credential{{SecretID: scanSecretID, SecretKey: scanSecretKey, Token: scanToken}},
		Allowlist:    []clbtest.Capability{clbtest.L4SNAT},
		TaskDuration: time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(&srvLogs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if _, err := srv.AddLoadBalancer(clbtest.LoadBalancer{ID: lbID, Type: clbtest.LoadBalancerInternal, VIPs: []string{"10.0.0.10"}}); err != nil {
		t.Fatal(err)
	}
	for _, port := range []int64{80, 443} {
		if _, err := srv.AddListener(clbtest.Listener{LoadBalancerID: lbID, Protocol: "TCP", Port: port}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string // every error, event and status text
	rec := record.NewFakeRecorder(1000)
	lbFor := func(key string) loadBalancer {
		cpf := profile.NewClientProfile()
		cpf.HttpProfile.Endpoint = srv.Endpoint()
		cpf.HttpProfile.Scheme = "HTTP"
		client, err := clb.NewClient(common.NewTokenCredential(scanSecretID, key, scanToken), clbtest.DefaultRegion, cpf)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tencent.NewProvider(&tencent.DriverOptions{Mode: tencent.ModeDirect, CLB: client, Logger: log, TaskPollInterval: time.Millisecond,
			Backoff: tencent.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Budget: 200 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		prof := core.ClusterProfile{Provider: tencent.Name, KubernetesVersion: "v1.37.2", ProxyMode: core.ProxyModeIPVS,
			KubeProxyVersion: "v1.20.6-tke.12", Allowlists: []core.Capability{tencent.CapL4SNAT}}
		inner := &fakecloud.Cloud{ExternalIP: net.ParseIP("10.0.0.10"), Provider: "fake", Exists: true}
		wrapped := cloudprovider.Wrap(inner, p, cloudprovider.WithProfile(prof), cloudprovider.WithEventRecorder(rec), cloudprovider.WithLogger(log),
			cloudprovider.WithPolicy(core.Policy{Prefer: core.PreferLBFeatures, AllowTickets: true}))
		lb, ok := wrapped.LoadBalancer()
		if !ok {
			t.Fatal("no LoadBalancer")
		}
		return lb
	}
	ctx := context.Background()
	ensure := func(lb loadBalancer, svcAnn map[string]string) {
		st, err := lb.EnsureLoadBalancer(ctx, "c", tkeService(svcAnn), nodes())
		out = append(out, fmt.Sprintf("%v %+v", err, st))
	}
	echo := "credential " + scanSecretID + "/" + scanSecretKey + " token " + scanToken + " refused"
	steps := []struct {
		name   string
		inject func()
		key    string
		off    bool
	}{
		{name: "throttled, then a 5xx, then busy", inject: func() {
			srv.InjectFault("DescribeListeners", 1, clbtest.ThrottleFault(""))
			srv.InjectFault("ModifyListener", 1, clbtest.HTTPFault(502))
			srv.InjectFault("ModifyListener", 1, clbtest.ErrorFault(clbtest.CodeResourceInOperating, "busy"))
		}},
		{name: "task fails, echoing the credentials", inject: func() {
			srv.InjectFault("ModifyListener", 1, clbtest.FailedTaskFault(echo))
		}, off: true},
		{name: "errors echo the credentials", inject: func() {
			srv.InjectFault("DescribeListeners", 100, clbtest.ErrorFault(clbtest.CodeInternalError, echo))
		}},
		{name: "auth error echoing the credentials", inject: func() {
			srv.InjectFault("DescribeListeners", 1, clbtest.ErrorFault(clbtest.CodeSignatureFailure, echo))
		}},
		{name: "wrong key", key: scanWrongKey},
		{name: "good run"},
	}
	for _, s := range steps {
		srv.ClearFaults()
		if s.inject != nil {
			s.inject()
		}
		key := scanSecretKey
		if s.key != "" {
			key = s.key
		}
		lb := lbFor(key)
		if s.off {
			// Take SNAT back off first so the write, and its failing task, happen.
			out = append(out, fmt.Sprint(lb.EnsureLoadBalancerDeleted(ctx, "c", tkeService(nil))))
			srv.ClearFaults()
			s.inject()
		}
		ensure(lb, nil)
	}
	out = append(out, fmt.Sprint(lbFor(scanSecretKey).EnsureLoadBalancerDeleted(ctx, "c", tkeService(nil))))
	close(rec.Events)
	for ev := range rec.Events {
		out = append(out, ev)
	}
	var calls []string
	for _, c := range srv.Calls() {
		calls = append(calls, fmt.Sprintf("%+v", c))
	}
	texts := map[string]string{"driver and decorator log": logs.String(), "errors, events, statuses": strings.Join(out, "\n"),
		"server log": srvLogs.String(), "server call log": strings.Join(calls, "\n")}
	for what, text := range texts {
		secrets := []string{scanSecretKey, scanWrongKey, scanToken, scanSecretID}
		if strings.HasPrefix(what, "server") {
			// The cloud's side knows which key ID called it; only key and token are secret there.
			secrets = secrets[:3]
		}
		for _, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("the %s holds a credential: ...%s...", what, text[max(0, i-200):min(len(text), i+len(secret)+50)])
			}
		}
	}
	if !strings.Contains(texts["errors, events, statuses"], "[redacted]") {
		t.Error("no echoed credential was redacted: the scan saw none of the echoes")
	}
	if strings.Count(logs.String(), "\n") < 10 || len(out) < 10 {
		t.Errorf("too little output to scan: %d log lines, %d texts", strings.Count(logs.String(), "\n"), len(out))
	}
	t.Logf("scanned %d log bytes, %d server log bytes, %d texts", logs.Len(), srvLogs.Len(), len(out))
}
