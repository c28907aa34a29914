package core

import "testing"

// TestHairpinAssess follows seed 002's conclusions and the rows of TESTING.md §1 measured in
// network namespaces (the dataplane lab re-checks them against the kernel).
func TestHairpinAssess(t *testing.T) {
	cases := map[string]struct {
		in     HairpinFacts
		works  Fact
		source SourceKind
		code   Code
	}{
		"NoMasqueradeIsMartian": {
			in:    HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: No, Attachment: AttachmentRouted},
			works: No, source: SourceUnknown, code: "hairpin-no-masquerade",
		},
		"RoutedNodeMasqueradeAlone": {
			in:    HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentRouted},
			works: Yes, source: SourceNode, code: "hairpin-masquerade",
		},
		"BridgeNetfilterOffMasqueradeAlone": {
			in:    HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeNetfilter: No, BridgeHairpin: No},
			works: Yes, source: SourceNode, code: "hairpin-masquerade",
		},
		"BridgeNeedsHairpinAndMasquerade": {
			in:    HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeNetfilter: Yes, BridgeHairpin: Yes},
			works: Yes, source: SourceNode, code: "hairpin-bridge-port-on",
		},
		"BridgeWithoutHairpinFails": {
			in:    HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeNetfilter: Yes, BridgeHairpin: No},
			works: No, source: SourceUnknown, code: "hairpin-bridge-port-off",
		},
		"CiliumRewritesTo169_254_42_1": {
			in:    HairpinFacts{Dataplane: DataplaneCiliumTC},
			works: Yes, source: SourceServiceLoopback, code: "hairpin-cilium-loopback",
		},
		"CiliumSocketLBInPodNeverHairpins": {
			in:    HairpinFacts{Dataplane: DataplaneCiliumSocketLB},
			works: Yes, source: SourceClientPod, code: "hairpin-cilium-socket-lb",
		},
		"BridgeHairpinUnknown": {
			in:    HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeNetfilter: Yes},
			works: Unknown, source: SourceUnknown, code: "hairpin-unknown",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.in.Assess()
			if got.Works != tc.works || got.Source.Kind != tc.source || !hasCode(got.Reasons, tc.code) {
				t.Errorf("got works=%s source=%s reasons=%v; want %s %s %s", got.Works, got.Source.Kind, codes(got.Reasons), tc.works, tc.source, tc.code)
			}
		})
	}
}

func TestCiliumLoopbackAddress(t *testing.T) {
	got := (&HairpinFacts{Dataplane: DataplaneCiliumTC}).Assess()
	if got.Source.Address != "169.254.42.1" {
		t.Errorf("address = %q, want Cilium's default 169.254.42.1 (seed 002 §5)", got.Source.Address)
	}
}

func TestKubeletHairpinModeWarning(t *testing.T) {
	for mode, warn := range map[string]bool{"": false, "none": false, "hairpin-veth": true, "promiscuous-bridge": true} {
		got := (&HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentRouted, KubeletHairpinMode: mode}).Assess()
		if hasCode(got.Reasons, "kubelet-hairpin-mode-unused") != warn {
			t.Errorf("kubeletHairpinMode %q: warning = %v, want %v", mode, !warn, warn)
		}
		if got.Works != Yes {
			t.Errorf("kubeletHairpinMode %q changed the verdict to %s; it has no effect", mode, got.Works)
		}
	}
}

func TestProfileHairpinFacts(t *testing.T) {
	tru, fls := true, false
	cases := map[string]struct {
		p    ClusterProfile
		nil_ bool
		want HairpinFacts
	}{
		"NothingKnown":   {p: ClusterProfile{}, nil_: true},
		"FlannelIPVS":    {p: ClusterProfile{ProxyMode: ProxyModeIPVS, Dataplane: DataplaneProfile{CNI: "flannel"}}, want: HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeHairpin: Yes, BridgeNetfilter: Yes}},
		"BridgePlugin":   {p: ClusterProfile{ProxyMode: ProxyModeIPTables, Dataplane: DataplaneProfile{CNI: "bridge"}}, want: HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeHairpin: No, BridgeNetfilter: Yes}},
		"BridgeDeclared": {p: ClusterProfile{ProxyMode: ProxyModeIPTables, Dataplane: DataplaneProfile{CNI: "bridge", BridgeHairpin: &tru, BridgeNetfilter: &fls}}, want: HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentBridge, BridgeHairpin: Yes, BridgeNetfilter: No}},
		"Cilium":         {p: ClusterProfile{ProxyMode: ProxyModeEBPF, Dataplane: DataplaneProfile{CNI: "cilium"}}, want: HairpinFacts{Dataplane: DataplaneCiliumTC, Attachment: AttachmentRouted}},
		"CiliumSocket":   {p: ClusterProfile{ProxyMode: ProxyModeEBPF, Dataplane: DataplaneProfile{CNI: "Cilium", SocketLBInPod: &tru}}, want: HairpinFacts{Dataplane: DataplaneCiliumSocketLB, Attachment: AttachmentRouted}},
		"CalicoNFT":      {p: ClusterProfile{ProxyMode: ProxyModeNFTables, Dataplane: DataplaneProfile{CNI: "calico"}}, want: HairpinFacts{Dataplane: DataplaneKubeProxy, SelfMasquerade: Yes, Attachment: AttachmentRouted, BridgeNetfilter: Yes}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.p.HairpinFacts()
			if tc.nil_ {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			if got == nil || *got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
