package chartcheck

import (
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// services returns the peers Service and the client Service.
func services(c *rc, p *problems) (peerSvc, client *corev1.Service) {
	po, err := c.r.Find("Service", peers)
	if err != nil {
		p.add("%v", err)
		return nil, nil
	}
	co, err := c.r.Find("Service", "r-ticketd")
	if err != nil {
		p.add("%v", err)
		return nil, nil
	}
	return po.Obj.(*corev1.Service), co.Obj.(*corev1.Service)
}

// checkServices: a headless peers Service that publishes not-Ready pods
// (F2) and a client Service of Ready pods only (F17).
func checkServices(c *rc, p *problems) {
	ps, cs := services(c, p)
	if ps == nil {
		return
	}
	s, err := statefulSet(c)
	if err != nil {
		return
	}
	podLabels := s.Spec.Template.Labels
	if ps.Spec.ClusterIP != corev1.ClusterIPNone || !ps.Spec.PublishNotReadyAddresses {
		p.add("peers Service: clusterIP %q publishNotReadyAddresses %v, want None and true: peers must find each other before any is Ready", ps.Spec.ClusterIP, ps.Spec.PublishNotReadyAddresses)
	}
	if cs.Spec.ClusterIP == corev1.ClusterIPNone || cs.Spec.PublishNotReadyAddresses {
		p.add("client Service: clusterIP %q publishNotReadyAddresses %v: clients must reach Ready pods only", cs.Spec.ClusterIP, cs.Spec.PublishNotReadyAddresses)
	}
	if c.standby() {
		o, err := c.r.Find("Service", "r-ticketd-standby")
		if err != nil {
			p.add("%v", err)
		} else if sb := o.Obj.(*corev1.Service); !sb.Spec.PublishNotReadyAddresses || string(sb.Spec.Type) != c.str("standby.service.type") ||
			!reflect.DeepEqual(sb.Spec.Selector, serverSelector) {
			p.add("standby Service %+v: want type %s selecting the pod before it is Ready, since the primary's replication is what makes it Ready", sb.Spec, c.str("standby.service.type"))
		}
	}
	if string(cs.Spec.Type) != c.str("service.type") {
		p.add("client Service type %s, want %s", cs.Spec.Type, c.str("service.type"))
	}
	for _, svc := range []*corev1.Service{ps, cs} {
		if !selects(svc.Spec.Selector, podLabels) || !reflect.DeepEqual(svc.Spec.Selector, serverSelector) {
			p.add("Service %s selector %v does not select exactly the server pods", svc.Name, svc.Spec.Selector)
		}
	}
	portsOf := func(svc *corev1.Service) map[string]int32 {
		m := map[string]int32{}
		for _, pt := range svc.Spec.Ports {
			m[pt.Name] = pt.Port
			if pt.TargetPort != intstr.FromString(pt.Name) {
				p.add("Service %s port %s targets %v, want the container port named %s", svc.Name, pt.Name, pt.TargetPort.String(), pt.Name)
			}
		}
		return m
	}
	wantPeers := map[string]int32{"http": int32(c.num("ports.http")), "raft": int32(c.num("ports.raft"))}
	if got := portsOf(ps); !reflect.DeepEqual(got, wantPeers) {
		p.add("peers Service ports %v, want %v", got, wantPeers)
	}
	wantClient := map[string]int32{"http": int32(c.num("ports.http"))}
	if r := c.num("ports.resp"); r > 0 {
		wantClient["resp"] = int32(r)
	}
	if got := portsOf(cs); !reflect.DeepEqual(got, wantClient) {
		p.add("client Service ports %v, want %v (never raft)", got, wantClient)
	}
}

// checkPDB: policy/v1, maxUnavailable only, 1 unless overridden, never 0
// (F9, F10).
func checkPDB(c *rc, p *problems) {
	list := c.r.OfKind("PodDisruptionBudget")
	if !c.on("pdb.enabled") || c.standby() {
		if len(list) != 0 {
			p.add("a PodDisruptionBudget is rendered while disabled or for a standby")
		}
		return
	}
	if len(list) != 1 {
		p.add("want one PodDisruptionBudget, got %d", len(list))
		return
	}
	pdb, ok := list[0].Obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		p.add("PodDisruptionBudget is %T, want policy/v1", list[0].Obj)
		return
	}
	want := int64(1)
	if x := c.num("pdb.maxUnavailable"); x > 0 {
		want = x
	}
	mu := pdb.Spec.MaxUnavailable
	if mu == nil || mu.Type != intstr.Int || int64(mu.IntVal) != want {
		p.add("PDB maxUnavailable %v, want %d", mu, want)
	}
	if tol := (c.num("replicas") - 1) / 2; mu != nil && (mu.IntVal < 1 || int64(mu.IntVal) > tol) {
		p.add("PDB maxUnavailable %d outside 1..%d: 0 blocks every drain, more costs quorum", mu.IntVal, tol)
	}
	if pdb.Spec.MinAvailable != nil {
		p.add("PDB minAvailable is set: switching between the two fails an upgrade (F9)")
	}
	if pdb.Spec.UnhealthyPodEvictionPolicy == nil || *pdb.Spec.UnhealthyPodEvictionPolicy != policyv1.IfHealthyBudget {
		p.add("PDB unhealthyPodEvictionPolicy %v, want IfHealthyBudget", pdb.Spec.UnhealthyPodEvictionPolicy)
	}
	if pdb.Spec.Selector == nil || !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, serverSelector) {
		p.add("PDB selector %v, want the server pods", pdb.Spec.Selector)
	}
}

// checkNetworkPolicy: the Raft port admits the members (and the extra
// CIDRs) only; the API admits what apiFrom says.
func checkNetworkPolicy(c *rc, p *problems) {
	list := c.r.OfKind("NetworkPolicy")
	if !c.on("networkPolicy.enabled") {
		if len(list) != 0 {
			p.add("a NetworkPolicy is rendered while disabled")
		}
		return
	}
	if len(list) != 1 {
		p.add("want one NetworkPolicy, got %d", len(list))
		return
	}
	np := list[0].Obj.(*networkingv1.NetworkPolicy)
	if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, serverSelector) || !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		p.add("NetworkPolicy selects %v for %v, want the server pods, Ingress", np.Spec.PodSelector.MatchLabels, np.Spec.PolicyTypes)
	}
	var raft, api []networkingv1.NetworkPolicyIngressRule
	for _, r := range np.Spec.Ingress {
		names := map[string]bool{}
		for _, pt := range r.Ports {
			if pt.Port == nil || pt.Port.Type != intstr.String {
				p.add("NetworkPolicy port %v: want a named port", pt.Port)
				continue
			}
			names[pt.Port.StrVal] = true
		}
		switch {
		case names["raft"] && len(names) == 1:
			raft = append(raft, r)
		case names["http"] && !names["raft"]:
			api = append(api, r)
		default:
			p.add("NetworkPolicy rule on ports %v: the Raft port must have a rule of its own", names)
		}
	}
	if len(raft) != 1 {
		p.add("want one NetworkPolicy rule for the Raft port, got %d", len(raft))
	} else {
		want := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: serverSelector}}}
		if extra, ok := c.val("networkPolicy.raftExtraFrom").([]any); ok {
			for _, cidr := range extra {
				want = append(want, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr.(string)}})
			}
		}
		if !reflect.DeepEqual(raft[0].From, want) {
			p.add("the Raft port admits %+v, want exactly the members and raftExtraFrom %+v", raft[0].From, want)
		}
	}
	if len(api) != 1 {
		p.add("want one NetworkPolicy rule for the API port, got %d", len(api))
		return
	}
	apiFrom, _ := c.val("networkPolicy.apiFrom").([]any)
	if len(apiFrom) == 0 {
		if len(api[0].From) != 0 {
			p.add("apiFrom is empty, but the API admits only %+v", api[0].From)
		}
		return
	}
	// The members and this release's hooks and backups come along, or
	// forwarding, joins and backups would break.
	members, jobs := false, false
	for _, peer := range api[0].From {
		if peer.PodSelector != nil && reflect.DeepEqual(peer.PodSelector.MatchLabels, serverSelector) && peer.NamespaceSelector == nil {
			members = true
		}
		if peer.PodSelector != nil && peer.NamespaceSelector == nil {
			for _, e := range peer.PodSelector.MatchExpressions {
				if e.Key == "app.kubernetes.io/component" && slices.Contains(e.Values, "backup") && slices.Contains(e.Values, "hook") {
					jobs = true
				}
			}
		}
	}
	if !members || !jobs || len(api[0].From) != len(apiFrom)+2 {
		p.add("with apiFrom set, the API must admit apiFrom, the members and the hook and backup pods; admits %+v", api[0].From)
	}
}
